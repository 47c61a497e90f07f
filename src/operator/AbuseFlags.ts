/**
 * The abuse guard's flags: opened by the guard in the transaction of the stop they name, listed and
 * resolved by operators (each resolution written to the audit log in its transaction).
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { AuditLog } from "../kernel/AuditLog.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { type AbuseFlagRow, OperatorRepo } from "./Repo.js"

export interface Resolution {
  readonly resolution: "dismissed" | "confirmed"
  readonly note: string
  readonly operator: string
}

const make = Effect.gen(function*() {
  const repo = yield* OperatorRepo
  const audit = yield* AuditLog
  const commit = yield* GroupCommit

  return {
    list: (options: { readonly all: boolean; readonly limit: number }) => repo.flags(options),

    /** Resolves an open flag; a resolved one is answered as it is (no audit row: nothing changed). */
    resolve: (flagId: string, resolution: Resolution) =>
      commit.transaction(Effect.gen(function*() {
        const id = flagId.toLowerCase()
        const found = yield* repo.flag(id)
        if (Option.isNone(found)) return yield* new ResourceNotFound({ detail: "Abuse flag not found" })
        if (found.value.resolution !== null) return found.value
        const at = yield* Clock.currentTimeMillis
        yield* repo.resolveFlag(id, { ...resolution, at })
        yield* audit.record({
          actor: resolution.operator,
          actorKind: "operator",
          action: "abuse_flag.resolve",
          organizationId: found.value.organization_id,
          reason: resolution.note,
          detail: { flag_id: id, machine_id: found.value.machine_id, resolution: resolution.resolution }
        })
        const resolved: AbuseFlagRow = {
          ...found.value,
          resolution: resolution.resolution,
          resolution_note: resolution.note,
          resolved_by: resolution.operator,
          resolved_at: at
        }
        return resolved
      })),

    /** Opens a flag: runs inside the transaction of the stop it names. */
    open: (row: AbuseFlagRow) => repo.insertFlag(row)
  }
})

export class AbuseFlags extends Context.Tag("svc/operator/AbuseFlags")<
  AbuseFlags,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(AbuseFlags, make)
}
