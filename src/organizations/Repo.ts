import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import type { Role } from "../kernel/domain/Access.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { Prepared } from "../kernel/sql/Sqlite.js"

export interface OrganizationRow {
  readonly id: string
  readonly name: string
  readonly created_at: number
  readonly deleted_at: number | null
  readonly purged_at: number | null
}

export interface MembershipRow {
  readonly organization_id: string
  readonly user_id: string
  readonly role: Role
  readonly max_running_machines: number | null
  readonly joined_at: number
}

export interface OrganizationOfUser extends MembershipRow {
  readonly name: string
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const prepared = yield* Prepared
  return {
    findById: (id: string) =>
      sql<OrganizationRow>`SELECT * FROM organizations WHERE id = ${id} AND deleted_at IS NULL`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      ),
    /** A new organization with `ownerId` as its owner, in one transaction. */
    createWithOwner: (name: string, ownerId: string, now: number) =>
      Effect.gen(function*() {
        const id = uuidv7()
        yield* sql`INSERT INTO organizations (id, name, created_at) VALUES (${id}, ${name}, ${now})`
        yield* sql`INSERT INTO memberships (organization_id, user_id, role, joined_at)
          VALUES (${id}, ${ownerId}, 'owner', ${now})`
        return { id, name, created_at: now, deleted_at: null, purged_at: null } satisfies OrganizationRow
      }).pipe(sql.withTransaction, Effect.orDie),
    // Every request in an organization runs this one (prepared: src/kernel/sql/Sqlite.ts).
    membership: (organizationId: string, userId: string) =>
      prepared.first<MembershipRow>(
        "SELECT * FROM memberships WHERE organization_id = ? AND user_id = ?",
        organizationId,
        userId
      ),
    members: (organizationId: string) =>
      sql<MembershipRow>`SELECT * FROM memberships WHERE organization_id = ${organizationId}
        ORDER BY joined_at`.pipe(Effect.orDie),
    organizationsOf: (userId: string) =>
      sql<OrganizationOfUser>`SELECT m.*, o.name FROM memberships m JOIN organizations o ON o.id = m.organization_id
        WHERE m.user_id = ${userId} ORDER BY m.joined_at, o.name`.pipe(Effect.orDie),
    ownedBy: (userId: string) =>
      sql<OrganizationRow>`SELECT o.* FROM organizations o JOIN memberships m ON m.organization_id = o.id
        WHERE m.user_id = ${userId} AND m.role = 'owner' ORDER BY o.created_at LIMIT 1`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      ),
    /** How many owners the organization has (the last one may not go). */
    ownerCount: (organizationId: string) =>
      sql<{ count: number }>`SELECT COUNT(*) AS count FROM memberships
        WHERE organization_id = ${organizationId} AND role = 'owner'`.pipe(
        Effect.map((rows) => Number(rows[0]?.count ?? 0)),
        Effect.orDie
      ),
    /** Sets the fields given; absent ones stay. */
    updateMember: (
      organizationId: string,
      userId: string,
      change: { readonly role?: Role | undefined; readonly max_running_machines?: number | null | undefined }
    ) =>
      Effect.gen(function*() {
        if (change.role !== undefined) {
          yield* sql`UPDATE memberships SET role = ${change.role}
            WHERE organization_id = ${organizationId} AND user_id = ${userId}`
        }
        if (change.max_running_machines !== undefined) {
          yield* sql`UPDATE memberships SET max_running_machines = ${change.max_running_machines}
            WHERE organization_id = ${organizationId} AND user_id = ${userId}`
        }
      }).pipe(Effect.orDie),
    addMember: (organizationId: string, userId: string, role: Role, now: number) =>
      Effect.orDie(sql`INSERT INTO memberships (organization_id, user_id, role, joined_at)
        VALUES (${organizationId}, ${userId}, ${role}, ${now})`),
    removeMember: (organizationId: string, userId: string) =>
      Effect.orDie(sql`DELETE FROM memberships WHERE organization_id = ${organizationId} AND user_id = ${userId}`),
    /** Marks the organization deleted and removes every member; answers how many there were. */
    markDeleted: (organizationId: string, now: number) =>
      Effect.gen(function*() {
        yield* sql`UPDATE organizations SET deleted_at = ${now} WHERE id = ${organizationId} AND deleted_at IS NULL`
        const removed = yield* sql<{ user_id: string }>`DELETE FROM memberships
          WHERE organization_id = ${organizationId} RETURNING user_id`
        return removed.length
      }).pipe(Effect.orDie),
    /** Organizations deleted at or before `before` whose data is not all gone yet. */
    unpurgedDeletedBefore: (before: number) =>
      sql<{ id: string }>`SELECT id FROM organizations WHERE deleted_at IS NOT NULL AND deleted_at <= ${before}
        AND purged_at IS NULL ORDER BY deleted_at`.pipe(Effect.map((rows) => rows.map((row) => row.id)), Effect.orDie),
    markPurged: (organizationId: string, now: number) =>
      Effect.orDie(sql`UPDATE organizations SET purged_at = ${now} WHERE id = ${organizationId}`),
    /** The deleted organizations, newest first (their machines must stay stopped). */
    deletedIds: sql<{ id: string }>`SELECT id FROM organizations WHERE deleted_at IS NOT NULL
      AND purged_at IS NULL ORDER BY deleted_at DESC`.pipe(
      Effect.map((rows) => rows.map((row) => row.id)),
      Effect.orDie
    )
  }
})

export class OrganizationsRepo extends Context.Tag("svc/organizations/OrganizationsRepo")<
  OrganizationsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(OrganizationsRepo, make)
}
