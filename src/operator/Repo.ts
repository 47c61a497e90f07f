/** SQL for the operator area's tables: suspended organizations and the abuse guard's flags. */
import { Context, Effect, Layer, type Option } from "effect"
import { Prepared } from "../kernel/sql/Sqlite.js"

export interface SuspensionRow {
  readonly organization_id: string
  readonly operator: string
  readonly reason: string
  readonly suspended_at: number
}

export interface AbuseFlagRow {
  readonly id: string
  readonly organization_id: string
  readonly machine_id: string
  readonly stop_operation_id: string
  readonly kind: "sustained_cpu"
  readonly action: "stopped"
  readonly min_cpu_permille: number
  readonly window_seconds: number
  readonly window_start: number
  readonly created_at: number
  readonly resolution: "dismissed" | "confirmed" | null
  readonly resolution_note: string | null
  readonly resolved_by: string | null
  readonly resolved_at: number | null
}

const make = Effect.gen(function*() {
  const db = yield* Prepared
  return {
    suspension: (organizationId: string): Effect.Effect<Option.Option<SuspensionRow>> =>
      db.first<SuspensionRow>("SELECT * FROM organization_suspensions WHERE organization_id = ?", organizationId),
    suspend: (row: SuspensionRow) => db.insert("organization_suspensions", row),
    /** Answers whether a suspension was lifted. */
    resume: (organizationId: string) =>
      Effect.map(
        db.run("DELETE FROM organization_suspensions WHERE organization_id = ?", organizationId),
        (changed) => changed > 0
      ),
    suspendedOrganizations: db.all<{ organization_id: string }>(
      "SELECT organization_id FROM organization_suspensions ORDER BY organization_id"
    ),

    insertFlag: (row: AbuseFlagRow) => db.insert("abuse_flags", row),
    flag: (id: string) => db.first<AbuseFlagRow>("SELECT * FROM abuse_flags WHERE id = ?", id),
    /** Newest first (ids are time-ordered); only the open ones unless `all`. */
    flags: (options: { readonly all: boolean; readonly limit: number }) =>
      options.all
        ? db.all<AbuseFlagRow>("SELECT * FROM abuse_flags ORDER BY id DESC LIMIT ?", options.limit)
        : db.all<AbuseFlagRow>(
          "SELECT * FROM abuse_flags WHERE resolution IS NULL ORDER BY id DESC LIMIT ?",
          options.limit
        ),
    /** Resolves an open flag; answers whether it was open. */
    resolveFlag: (id: string, resolution: { resolution: string; note: string; operator: string; at: number }) =>
      Effect.map(
        db.run(
          "UPDATE abuse_flags SET resolution = ?, resolution_note = ?, resolved_by = ?, resolved_at = ? " +
            "WHERE id = ? AND resolution IS NULL",
          resolution.resolution,
          resolution.note,
          resolution.operator,
          resolution.at,
          id
        ),
        (changed) => changed > 0
      )
  }
})

export class OperatorRepo extends Context.Tag("svc/operator/OperatorRepo")<
  OperatorRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(OperatorRepo, make)
}
