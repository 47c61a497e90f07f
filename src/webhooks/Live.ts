/**
 * The webhooks area over its repository and the SSRF-safe outbound client (provided here only),
 * with its sender, and its outbox recorder for the runtime's EventRecorders port (src/App.ts).
 */
import { Effect, Layer } from "effect"
import { Outbound } from "../kernel/http/Outbound.js"
import { Gauges, single } from "../kernel/metrics/Gauges.js"
import { makeRecorder } from "./Recorder.js"
import { WebhooksRepo } from "./Repo.js"
import { Webhooks } from "./Webhooks.js"
import { WebhookSender } from "./Worker.js"

/** The queue's depth on /metrics. */
const QueueGauge = Layer.effectDiscard(Effect.gen(function*() {
  const repo = yield* WebhooksRepo
  const gauges = yield* Gauges
  yield* gauges.register({
    name: "svc_webhook_deliveries_pending",
    help: "Webhook deliveries waiting to be sent or retried",
    read: single(repo.pendingCount)
  })
}))

export const WebhooksLive = Layer.mergeAll(Webhooks.layer, QueueGauge).pipe(
  Layer.provideMerge(WebhookSender.layer),
  Layer.provide(Layer.merge(WebhooksRepo.layer, Outbound.layer))
)

/** The recorder that writes deliveries inside the transaction of their event. */
export const webhookRecorder = Effect.provide(makeRecorder, WebhooksRepo.layer)
