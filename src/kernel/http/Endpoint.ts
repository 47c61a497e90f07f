/**
 * One declaration per endpoint: method, name, path, who may call it and what it can answer.
 * `Endpoint.post("create", "/v1/machines", { policy: policy("C", "header"), errors: [NameTaken] })`
 * Errors live on endpoints only (the API and its groups declare none), each class in its wire form;
 * the errors any request can meet (422, 413, 429, 500) come first on every endpoint.
 */
import { HttpApiEndpoint } from "@effect/platform"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import type { Schema } from "effect"
import { BodyTooLarge, InternalError, InvalidRequest, RateLimited } from "./Errors.js"
import { Policy, type PolicySpec } from "./Policy.js"
import { type ProblemClass, wire } from "./Problem.js"

/** What any request can be answered besides its own errors. */
const anyRequestErrors = [InvalidRequest, BodyTooLarge, RateLimited, InternalError] as const

export interface EndpointSpec<Classes extends ReadonlyArray<ProblemClass<any>>> {
  readonly policy: PolicySpec
  readonly errors?: Classes
}

type Errors<Classes extends ReadonlyArray<ProblemClass<any>>> = Schema.Schema.Type<
  Classes[number] | typeof anyRequestErrors[number]
>

const make =
  <Method extends HttpMethod>(method: Method) =>
  <const Name extends string, const Classes extends ReadonlyArray<ProblemClass<any>> = readonly []>(
    name: Name,
    path: HttpApiEndpoint.PathSegment,
    spec: EndpointSpec<Classes>
  ): HttpApiEndpoint.HttpApiEndpoint<Name, Method, never, never, never, never, void, Errors<Classes>> =>
    // addError only widens the error type; the fold cannot say so class by class.
    [...anyRequestErrors, ...(spec.errors ?? [])].reduce(
      (endpoint: any, cls) => endpoint.addError(wire(cls)),
      HttpApiEndpoint.make(method)(name, path).annotate(Policy, spec.policy)
    )

export const Endpoint = {
  get: make("GET"),
  post: make("POST"),
  put: make("PUT"),
  patch: make("PATCH"),
  del: make("DELETE")
}
