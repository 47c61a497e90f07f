import { HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Roles } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { policy } from "../kernel/http/Policy.js"

const Usage = Schema.Struct({ limit: Schema.Int, used: Schema.Int })

export const LimitsDto = Schema.Struct({
  concurrent_machines: Usage,
  starts: Schema.Array(Schema.Struct({ window: Schema.Literal("hour"), limit: Schema.Int, used: Schema.Int })),
  /**
   * The organization's: `exhausted` once its balance is used up (boots answer 402 `balance_exhausted`),
   * `suspended` while an operator has suspended it (boots and other uses answer 403).
   */
  status: Schema.Literal("active", "exhausted", "suspended"),
  /** `unlimited`, `trial`, the plan's name, or `paid` (bought credit without a plan). */
  tier: Schema.Literal("trial", "paid", "unlimited", "starter", "pro", "team", "scale")
})

export class LimitsApi extends HttpApiGroup.make("limits")
  .add(
    Endpoint.get("get", "/v1/limits", {
      summary: "Get the organization's limits",
      description: "Concurrent machines and starts per hour, each with its limit and use; a boot past either " +
        "answers 429 `limit_exceeded`. `tier` is `unlimited`, `trial` or the plan; `status` is the organization's " +
        "(`exhausted` once its balance is used up, `suspended` while an operator has suspended it: boots and " +
        "other uses answer 403 `organization_suspended`).",
      policy: policy("R", "header", Roles.anyMember)
    }).addSuccess(LimitsDto)
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Limits: how many machines the organization may run and start.")
{}
