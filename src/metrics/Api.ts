import { HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authorization } from "../kernel/http/Authorization.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { policy } from "../kernel/http/Policy.js"
import { contentType } from "../kernel/metrics/Prometheus.js"
import { NotReady } from "./Errors.js"

export const Health = Schema.Struct({ status: Schema.Literal("ok") }).annotations({ identifier: "Health" })

export const Readiness = Schema.Struct({
  status: Schema.Literal("ready"),
  database: Schema.Literal("ok"),
  runtime: Schema.Literal("ok")
}).annotations({ identifier: "Readiness" })

export class MetricsApi extends HttpApiGroup.make("metrics")
  .add(
    Endpoint.get("get", "/metrics", {
      summary: "Read the service's metrics",
      description: "Prometheus text format (0.0.4): operations by kind and status, the accept latency " +
        "histogram, machines by state, actor mailbox depth, group-commit batch sizes, queue depths, HTTP " +
        "requests by route and status, the process's CPU and memory, each running machine's use " +
        "(docs/observability.md names every series). Needs the operator token; 404 while none is set.",
      policy: policy("O")
    }).addSuccess(Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType })))
  )
  .add(
    Endpoint.get("health", "/healthz", {
      summary: "Is the process alive",
      description: "Answers 200 `{\"status\": \"ok\"}` while the process serves requests; for a liveness " +
        "probe (restart svc when it stops answering). Reads nothing else.",
      policy: policy("N")
    }).addSuccess(Health)
  )
  .add(
    Endpoint.get("ready", "/readyz", {
      summary: "Can it serve",
      description: "Answers 200 when the database answers a query and machines can run on this host; else " +
        "503 `not_ready` saying which part is not (for a readiness probe or a load balancer: send no " +
        "traffic meanwhile). The reason machines cannot run is logged at start, not told here.",
      policy: policy("N"),
      errors: [NotReady]
    }).addSuccess(Readiness)
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Metrics and health: what a Prometheus server and a prober read.")
{}
