import { HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authorization } from "../kernel/http/Authorization.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { policy } from "../kernel/http/Policy.js"
import { contentType } from "../kernel/metrics/Prometheus.js"

export class MetricsApi extends HttpApiGroup.make("metrics")
  .add(
    Endpoint.get("get", "/metrics", {
      summary: "Read the service's metrics",
      description: "Prometheus text format (0.0.4): operations by kind and status, the accept latency " +
        "histogram, machines by state, actor mailbox depth, group-commit batch sizes, queue depths. " +
        "Needs the operator token; 404 while none is set.",
      policy: policy("O")
    }).addSuccess(Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType })))
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Metrics: what a Prometheus server scrapes.")
{}
