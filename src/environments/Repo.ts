import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"

export interface EnvironmentRow {
  readonly id: string
  readonly organization_id: string
  readonly name: string
  readonly version: number
  readonly variable_names: string
  readonly created_at: number
  readonly updated_at: number
  readonly deleted_at: number | null
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return {
    insert: (row: EnvironmentRow) => Effect.orDie(sql`INSERT INTO environments ${sql.insert(row as any)}`),
    findIn: (organizationId: string, id: string) =>
      sql<EnvironmentRow>`SELECT * FROM environments WHERE id = ${id} AND organization_id = ${organizationId}
        AND deleted_at IS NULL`.pipe(Effect.map((rows) => Option.fromNullable(rows[0])), Effect.orDie),
    list: (organizationId: string) =>
      sql<EnvironmentRow>`SELECT * FROM environments WHERE organization_id = ${organizationId}
        AND deleted_at IS NULL ORDER BY id`.pipe(Effect.orDie),
    update: (
      id: string,
      patch: Partial<Pick<EnvironmentRow, "name" | "version" | "variable_names" | "updated_at" | "deleted_at">>
    ) => Effect.orDie(sql`UPDATE environments SET ${sql.update(patch as any)} WHERE id = ${id}`),
    insertVersion: (environmentId: string, version: number, sealed: string, now: number) =>
      Effect.orDie(sql`INSERT INTO environment_versions (environment_id, version, sealed_variables, created_at)
        VALUES (${environmentId}, ${version}, ${sealed}, ${now})`),
    sealedVersion: (environmentId: string, version: number) =>
      sql<{ sealed_variables: string }>`SELECT sealed_variables FROM environment_versions
        WHERE environment_id = ${environmentId} AND version = ${version}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0]?.sealed_variables)),
        Effect.orDie
      )
  }
})

export class EnvironmentsRepo extends Context.Tag("svc/environments/EnvironmentsRepo")<
  EnvironmentsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(EnvironmentsRepo, make)
}
