/**
 * The alerts area over its repository (provided here only), with its sender, and its outbox
 * recorder for the runtime's EventRecorders port (src/App.ts).
 */
import { Effect, Layer } from "effect"
import { Alerts } from "./Alerts.js"
import { makeRecorder } from "./Recorder.js"
import { AlertsRepo } from "./Repo.js"
import { AlertSender } from "./Worker.js"

export const AlertsLive = Layer.merge(Alerts.layer, AlertSender.layer).pipe(Layer.provide(AlertsRepo.layer))

/** The recorder that writes alerts inside the transaction of their cause. */
export const alertRecorder = Effect.provide(makeRecorder, AlertsRepo.layer)
