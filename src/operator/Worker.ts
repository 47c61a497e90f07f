/**
 * The operator area's background work: at start, the machines of suspended organizations that still
 * run (svc was killed mid-suspension) are stopped; then the abuse guard samples on the Clock.
 */
import { Duration, Effect, Layer } from "effect"
import { makeAbuseGuard } from "./AbuseGuard.js"
import { Suspensions } from "./Suspensions.js"

export const layer = Layer.scopedDiscard(Effect.gen(function*() {
  const suspensions = yield* Suspensions
  yield* suspensions.converge.pipe(
    Effect.catchAllCause((cause) => Effect.logError("suspensions did not converge", cause)),
    Effect.forkScoped
  )
  const guard = yield* makeAbuseGuard
  if (guard.settings.scope === "off") return
  yield* guard.sample.pipe(
    Effect.catchAllCause((cause) => Effect.logError("abuse guard sample failed", cause)),
    Effect.zipRight(Effect.sleep(Duration.seconds(guard.settings.sampleSeconds))),
    Effect.forever,
    Effect.forkScoped
  )
}))
