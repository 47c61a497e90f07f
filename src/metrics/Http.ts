import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import { Metrics } from "./Metrics.js"

export const MetricsHandlers = HttpApiBuilder.group(
  Api,
  "metrics",
  (handlers) =>
    Effect.map(Metrics, (metrics) =>
      handlers
        .handle("get", () => metrics.scrape)
        .handle("health", () => Effect.succeed({ status: "ok" as const }))
        .handle("ready", () => metrics.readiness))
).pipe(buildWithOnly(Authorization, Metrics))
