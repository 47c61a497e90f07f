import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { currentOrganization } from "../kernel/http/CallerContext.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import { Limits } from "./Limits.js"

export const LimitsHandlers = HttpApiBuilder.group(Api, "limits", (handlers) =>
  Effect.gen(function*() {
    const limits = yield* Limits
    return handlers.handle("get", () =>
      Effect.flatMap(currentOrganization, (organization) => limits.view(organization.id)))
  })).pipe(buildWithOnly(Authorization, Limits))
