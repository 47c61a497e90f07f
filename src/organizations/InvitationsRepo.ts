import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import type { Role } from "../kernel/domain/Access.js"

export interface InvitationRow {
  readonly id: string
  readonly organization_id: string
  readonly invited_by: string
  readonly email: string
  readonly role: Role
  readonly token_hash: string
  readonly created_at: number
  readonly expires_at: number
  readonly accepted_at: number | null
  readonly accepted_by: string | null
  readonly revoked_at: number | null
}

export type InvitationState = "open" | "accepted" | "revoked" | "expired"

export const stateOf = (row: InvitationRow, now: number): InvitationState =>
  row.accepted_at !== null
    ? "accepted"
    : row.revoked_at !== null
    ? "revoked"
    : row.expires_at <= now
    ? "expired"
    : "open"

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const first = (rows: ReadonlyArray<InvitationRow>) => Option.fromNullable(rows[0])
  return {
    insert: (row: InvitationRow) => Effect.orDie(sql`INSERT INTO invitations ${sql.insert(row as any)}`),
    findById: (organizationId: string, id: string) =>
      sql<InvitationRow>`SELECT * FROM invitations WHERE id = ${id} AND organization_id = ${organizationId}`.pipe(
        Effect.map(first),
        Effect.orDie
      ),
    findByTokenHash: (tokenHash: string) =>
      sql<InvitationRow>`SELECT * FROM invitations WHERE token_hash = ${tokenHash}`.pipe(
        Effect.map(first),
        Effect.orDie
      ),
    /** The organization's open invitations, newest first. */
    listOpen: (organizationId: string, now: number) =>
      sql<InvitationRow>`SELECT * FROM invitations WHERE organization_id = ${organizationId}
        AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > ${now}
        ORDER BY created_at DESC, id`.pipe(Effect.orDie),
    /** Creation times of the organization's invitations since `since`, oldest first (the daily limit). */
    createdSince: (organizationId: string, since: number) =>
      sql<{ created_at: number }>`SELECT created_at FROM invitations
        WHERE organization_id = ${organizationId} AND created_at > ${since} ORDER BY created_at`.pipe(
        Effect.map((rows) => rows.map((row) => Number(row.created_at))),
        Effect.orDie
      ),
    /** Whether any live organization holds an open invitation to this (normalized) address. */
    openFor: (email: string, now: number) =>
      sql<{ id: string }>`SELECT i.id FROM invitations i JOIN organizations o ON o.id = i.organization_id
        WHERE i.email = ${email} AND i.expires_at > ${now} AND i.accepted_at IS NULL AND i.revoked_at IS NULL
        AND o.deleted_at IS NULL LIMIT 1`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
    /** Revokes the open invitations to `email` in the organization (a new one replaces them). */
    revokeOpenTo: (organizationId: string, email: string, now: number) =>
      Effect.orDie(sql`UPDATE invitations SET revoked_at = ${now} WHERE organization_id = ${organizationId}
        AND email = ${email} AND accepted_at IS NULL AND revoked_at IS NULL`),
    /** Revokes every invitation of the organization still waiting (it was deleted). */
    revokeAllOpen: (organizationId: string, now: number) =>
      Effect.orDie(sql`UPDATE invitations SET revoked_at = ${now} WHERE organization_id = ${organizationId}
        AND accepted_at IS NULL AND revoked_at IS NULL`),
    /** Revokes one invitation unless it was accepted or revoked already. */
    revoke: (id: string, now: number) =>
      Effect.orDie(sql`UPDATE invitations SET revoked_at = ${now} WHERE id = ${id}
        AND accepted_at IS NULL AND revoked_at IS NULL`),
    /** Uses the invitation up if it is still open; false when another request won or it closed. */
    accept: (id: string, userId: string, now: number) =>
      sql<{ id: string }>`UPDATE invitations SET accepted_at = ${now}, accepted_by = ${userId}
        WHERE id = ${id} AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > ${now}
        RETURNING id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)
  }
})

export class InvitationsRepo extends Context.Tag("svc/organizations/InvitationsRepo")<
  InvitationsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(InvitationsRepo, make)
}
