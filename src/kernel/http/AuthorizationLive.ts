/**
 * The authorization middleware: finds the endpoint's Policy and asks Authenticate for the caller
 * under it (API key, session with CSRF, or operator token; organization; role). Everything a route
 * needs to know about its caller arrives as `Caller`; handlers hold no auth logic. A caller who may
 * call a route is then refused a request of a form the route cannot read (RequestForm.ts), and one
 * that takes no body a body with members (Dto.ts `refuseBody`).
 */
import { HttpMethod, HttpRouter, HttpServerRequest } from "@effect/platform"
import type { HttpApiEndpoint } from "@effect/platform"
import { Context, Effect, Layer, Option } from "effect"
import { Authenticate, type Requirement } from "./Authenticate.js"
import { Authorization } from "./Authorization.js"
import { refuseBody } from "./Dto.js"
import { Policy, type PolicySpec, refusedWhileSuspended } from "./Policy.js"
import { checkRequestForm, type RequestForm, requestFormOf } from "./RequestForm.js"

/** What the policy index reads of an HttpApi: its groups' endpoints. */
type AnyApi = { readonly groups: Readonly<Record<string, { readonly endpoints: Readonly<Record<string, unknown>> }>> }

/** "METHOD /path/:param" of every endpoint to its policy; an endpoint without one is a defect. */
export const policyIndex = (api: AnyApi) => {
  const index = new Map<string, PolicySpec>()
  for (const [key, { policy }] of endpointIndex(api)) index.set(key, policy)
  return index
}

/** "METHOD /path/:param" of every endpoint to its policy and whether it takes no body though its method may carry one. */
const endpointIndex = (api: AnyApi) => {
  const index = new Map<
    string,
    {
      readonly policy: PolicySpec
      readonly noBody: boolean
      readonly refusedWhileSuspended: boolean
      readonly form: RequestForm
    }
  >()
  for (const group of Object.values(api.groups)) {
    for (const endpoint of Object.values(group.endpoints) as Array<HttpApiEndpoint.HttpApiEndpoint.AnyWithProps>) {
      const spec = Context.getOption(endpoint.annotations, Policy)
      if (Option.isNone(spec)) throw new Error(`endpoint ${endpoint.name} has no Policy annotation`)
      index.set(`${endpoint.method} ${endpoint.path}`, {
        policy: spec.value,
        noBody: HttpMethod.hasBody(endpoint.method) && Option.isNone(endpoint.payloadSchema),
        refusedWhileSuspended: refusedWhileSuspended(endpoint.method, spec.value),
        form: requestFormOf(endpoint)
      })
    }
  }
  return index
}

/** The middleware for `api` (src/Api.ts, passed in: the kernel imports no area's contract). */
export const AuthorizationLive = (api: AnyApi) =>
  Layer.effect(
    Authorization,
    Effect.gen(function*() {
      const { authenticate } = yield* Authenticate
      // Each policy's requirement is made once; only an organization in the path is read per request.
      const requirements = new Map<string, Requirement>()
      const noBody = new Set<string>()
      const forms = new Map<string, RequestForm>()
      for (const [key, { form, noBody: none, policy: spec, refusedWhileSuspended }] of endpointIndex(api)) {
        forms.set(key, form)
        const base = { access: spec.access, refusedWhileSuspended }
        requirements.set(
          key,
          spec.organization === "none"
            ? { ...base, organization: "none" }
            : { ...base, organization: spec.organization === "path" ? { path: "" } : "header", roles: spec.roles }
        )
        if (none) noBody.add(key)
      }
      return Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const { params, route } = yield* HttpRouter.RouteContext
        const requirement = requirements.get(`${route.method} ${route.path}`)
        if (requirement === undefined) return yield* Effect.dieMessage(`no policy for ${route.method} ${route.path}`)
        const caller = yield* authenticate(
          request,
          requirement.organization !== "none" && typeof requirement.organization === "object"
            ? { ...requirement, organization: { path: params["organization_id"] ?? "" } }
            : requirement
        )
        yield* checkRequestForm(request, forms.get(`${route.method} ${route.path}`)!)
        if (noBody.has(`${route.method} ${route.path}`)) yield* refuseBody(request)
        return caller
      })
    })
  )
