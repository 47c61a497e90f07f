/**
 * The operator area's background work: at start, the machines of suspended organizations that still
 * run (svc was killed mid-suspension) are stopped; then the abuse guard samples on the Clock.
 * The guard does not run when it can watch nobody: scope `off`, or `trial` with `SVC_BILLING=unlimited`
 * (every organization is on the unlimited tier), so an idle homelab svc does no sampling.
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
  if (!guard.watchesAnyone) return
  yield* guard.sample.pipe(
    Effect.catchAllCause((cause) => Effect.logError("abuse guard sample failed", cause)),
    Effect.zipRight(Effect.sleep(Duration.seconds(guard.settings.sampleSeconds))),
    Effect.forever,
    Effect.forkScoped
  )
}))
