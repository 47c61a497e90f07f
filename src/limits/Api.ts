import { HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authorization } from "../kernel/http/Authorization.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { policy } from "../kernel/http/Policy.js"

const Usage = Schema.Struct({ limit: Schema.Int, used: Schema.Int })

export const LimitsDto = Schema.Struct({
  concurrent_machines: Usage,
  starts: Schema.Array(Schema.Struct({ window: Schema.Literal("hour"), limit: Schema.Int, used: Schema.Int })),
  /**
   * `at_limit` once any limit is used up: the next boot would answer 429 `limit_exceeded`;
   * `suspended` while an operator has suspended the organization (boots answer 403).
   */
  status: Schema.Literal("ok", "at_limit", "suspended"),
  tier: Schema.Literal("trial", "paid", "unlimited")
})

export class LimitsApi extends HttpApiGroup.make("limits")
  .add(
    Endpoint.get("get", "/v1/limits", {
      summary: "Get the organization's limits",
      description: "Concurrent machines and starts per hour, each with its limit and use. `status` is `at_limit` " +
        "once any is used up: the next boot would answer 429 `limit_exceeded`; `suspended` while the " +
        "organization is suspended (boots and other uses answer 403 `organization_suspended`).",
      policy: policy("R", "header")
    }).addSuccess(LimitsDto)
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Limits: how many machines the organization may run and start.")
{}
