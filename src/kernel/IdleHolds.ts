/**
 * The port "which machines are in use by a person right now?": an open terminal is activity, so it
 * holds a machine's `idle_sleep` off (never its `auto_stop`). The machines area's stop timers ask
 * it; the terminals area fills it from its own table, so the machines' SQL never names it.
 */
import { Context, Effect, Layer } from "effect"

export interface IdleHoldsShape {
  /** The ids of the machines held awake now. */
  readonly held: Effect.Effect<ReadonlyArray<string>>
}

export class IdleHolds extends Context.Tag("svc/kernel/IdleHolds")<IdleHolds, IdleHoldsShape>() {
  /** Nothing holds a machine (no terminals area). */
  static readonly none = Layer.succeed(IdleHolds, { held: Effect.succeed([]) })
}
