/**
 * The alerts area over its repository (provided here only), with its sender, and its outbox
 * recorder for the runtime's EventRecorders port (src/App.ts).
 */
import { Effect, Layer } from "effect"
import { Gauges, single } from "../kernel/metrics/Gauges.js"
import { Alerts } from "./Alerts.js"
import { makeRecorder } from "./Recorder.js"
import { AlertsRepo } from "./Repo.js"
import { AlertSender } from "./Worker.js"

/** The mail queue's depth for `/metrics`: alerts not yet mailed (sign-in mails are sent inline). */
const QueueGauge = Layer.effectDiscard(Effect.gen(function*() {
  const repo = yield* AlertsRepo
  const gauges = yield* Gauges
  yield* gauges.register({
    name: "svc_alert_mails_pending",
    help: "Alert e-mails waiting to be sent (coalescing or retrying)",
    read: single(repo.pendingCount)
  })
}))

export const AlertsLive = Layer.mergeAll(Alerts.layer, AlertSender.layer, QueueGauge).pipe(
  Layer.provide(AlertsRepo.layer)
)

/** The recorder that writes alerts inside the transaction of their cause. */
export const alertRecorder = Effect.provide(makeRecorder, AlertsRepo.layer)
