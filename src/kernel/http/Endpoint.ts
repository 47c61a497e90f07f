/**
 * One declaration per endpoint: method, name, path, who may call it, what it can answer and how the
 * published document describes it.
 * `Endpoint.post("create", "/v1/machines", { summary, description, policy: policy("C", "header"), errors: [NameTaken] })`
 * Errors live on endpoints only (the API and its groups declare none), each class in its wire form;
 * the errors any request can meet (422, 413, 429, 500) come first on every endpoint.
 *
 * The OpenAPI operation is made from the same declaration: its summary and description, the
 * security its Policy's access code allows (so the /docs page can send a key, a session or the
 * operator token), the X-Organization-ID header of an [ORG] route, the roles of an organization's
 * route (`x-svc-roles` and a sentence), and one problem response per status listing the codes this
 * route can answer with it.
 */
import { HttpApiEndpoint, OpenApi } from "@effect/platform"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import type { Schema } from "effect"
import { everyRole, isMutatingMethod } from "../domain/Access.js"
import {
  BodyTooLarge,
  CsrfInvalid,
  Forbidden,
  InsufficientScope,
  InternalError,
  InvalidApiKey,
  InvalidRequest,
  OrganizationMismatch,
  OrganizationSuspended,
  RateLimited,
  ResourceNotFound,
  SessionRequired,
  Unauthenticated,
  UnsupportedMediaType
} from "./Errors.js"
import { Policy, type PolicySpec, refusedWhileSuspended } from "./Policy.js"
import { type ProblemClass, specOfClass, wire } from "./Problem.js"

/** What any request can be answered besides its own errors. */
const anyRequestErrors = [InvalidRequest, BodyTooLarge, RateLimited, InternalError] as const

export interface EndpointSpec<Classes extends ReadonlyArray<ProblemClass<any>>> {
  /** One line: what the route does. */
  readonly summary: string
  /** What a caller needs to know beyond the shapes: rules, defaults, what happens next. */
  readonly description: string
  readonly policy: PolicySpec
  readonly errors?: Classes
  /**
   * Responses the route gives in a shape other than problem details (the device token's RFC 8628
   * errors), published as they are, by status.
   */
  readonly otherResponses?: Readonly<Record<string, object>>
}

type Errors<Classes extends ReadonlyArray<ProblemClass<any>>> = Schema.Schema.Type<
  Classes[number] | typeof anyRequestErrors[number]
>

// The document's pieces

/** The security schemes of the published document, by the names routes refer to. */
export const securitySchemes = {
  apiKey: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "svc_<8 id characters>_<secret>",
    description: "An API key: `Authorization: Bearer svc_...`. It fixes its organization and acts with its " +
      "preset and its creator's current role."
  },
  session: {
    type: "apiKey",
    in: "cookie",
    name: "svc_session",
    description: "A browser session, set by a sign-in. Reads need only the cookie."
  },
  csrf: {
    type: "apiKey",
    in: "header",
    name: "X-CSRF-Token",
    description: "With a session, every change (POST, PUT, PATCH, DELETE) repeats the `svc_csrf` cookie's value here."
  },
  operatorToken: {
    type: "apiKey",
    in: "header",
    name: "X-Svc-Operator-Token",
    description: "The operator token (`SVC_OPERATOR_TOKEN`) on operator routes, which take no other credential."
  }
} as const

type SecurityRequirement = Record<keyof typeof securitySchemes, ReadonlyArray<string>>

/** Who the route lets in, as OpenAPI security requirements (alternatives; each one's schemes together). */
const securityOf = (method: HttpMethod, { access }: PolicySpec): Array<Partial<SecurityRequirement>> => {
  const session = isMutatingMethod(method) ? { session: [], csrf: [] } : { session: [] }
  switch (access) {
    case "N":
      return []
    case "O":
      return [{ operatorToken: [] }]
    case "S":
      return [session]
    default:
      return [{ apiKey: [] }, session]
  }
}

const keyPresets: Record<string, string> = {
  R: "an API key (any preset) or a browser session",
  U: "an API key with preset `use_existing`, `create_and_use` or `full_access`, or a browser session",
  C: "an API key with preset `create_and_use` or `full_access`, or a browser session",
  F: "an API key with preset `full_access`, or a browser session",
  S: "a browser session only (an API key is refused: `session_required`)",
  N: "no authentication",
  O: "the operator token (`X-Svc-Operator-Token`) only"
}

/** The access paragraph every operation's description ends with. */
const accessOf = (method: HttpMethod, policy: PolicySpec) => {
  const parts = [`**Access ${policy.access}**: ${keyPresets[policy.access]}`]
  if (policy.organization === "header") parts.push("organization from `X-Organization-ID` ([ORG])")
  if (policy.organization === "path") {
    parts.push("the organization in the path, which a session names again in `X-Organization-ID`")
  }
  if (isMutatingMethod(method) && (policy.access !== "N" && policy.access !== "O")) {
    parts.push("with a session, `X-CSRF-Token`")
  }
  if (refusedWhileSuspended(method, policy)) parts.push("refused while the organization is suspended")
  return parts.join("; ") + "." + rolesOf(policy)
}

/** The roles sentence of an organization-scoped operation (its roles are also `x-svc-roles`). */
const rolesOf = (policy: PolicySpec) => {
  if (policy.organization === "none") return ""
  if (everyRole(policy.roles)) return "\n\n**Roles**: any member of the organization."
  return `\n\n**Roles**: ${policy.roles.map((role) => `\`${role}\``).join(", ")}; any other member is refused ` +
    "with `403 forbidden`, with a session or with a key they made (a key acts with its creator's current role)."
}

/** The errors the authorization middleware can answer under this policy (src/kernel/http/Authenticate.ts). */
const accessErrors = (method: HttpMethod, spec: PolicySpec): ReadonlyArray<ProblemClass<any>> => {
  const { access, organization } = spec
  if (access === "N") return []
  if (access === "O") return [Unauthenticated, ResourceNotFound]
  return [
    Unauthenticated,
    InvalidApiKey,
    ...(access === "S" ? [SessionRequired] : access === "R" ? [] : [InsufficientScope]),
    ...(isMutatingMethod(method) ? [CsrfInvalid] : []),
    ...(organization === "none" ? [] : [OrganizationMismatch]),
    ...(organization === "none" ? [] : [Forbidden, ResourceNotFound]),
    ...(refusedWhileSuspended(method, spec) ? [OrganizationSuspended] : [])
  ]
}

const organizationHeader = {
  name: "X-Organization-ID",
  in: "header",
  required: false,
  description: "The organization to act in ([ORG]). An API key fixes its organization: when sent, this must " +
    "match it (`organization_mismatch`). With a session it is required: without it the route answers 422 " +
    "`invalid_request` naming `X-Organization-ID` in `field_errors`.",
  schema: { type: "string", format: "uuid" }
}

/** The same header on a route naming its organization in the path: it must name that one too. */
const pathOrganizationHeader = {
  ...organizationHeader,
  description: "The organization the caller means to act in, as on [ORG] routes: with a session it is required " +
    "and must be the organization in the path (else 403 `organization_mismatch`; left out, 422 `invalid_request` " +
    "naming `X-Organization-ID`); with an API key it may be left out and, when sent, must be the key's " +
    "organization (`organization_mismatch`)."
}

const problemContent = {
  "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } }
}

/** Each error status with the codes (and titles) this route can answer with it. */
const errorResponses = (classes: ReadonlyArray<ProblemClass<any>>) => {
  const byStatus = new Map<number, Array<string>>()
  for (const cls of classes) {
    const spec = specOfClass(cls)!
    const line = `\`${(cls as unknown as { _tag: string })._tag}\`: ${spec.title}`
    const lines = byStatus.get(spec.status) ?? []
    if (!lines.includes(line)) lines.push(line)
    byStatus.set(spec.status, lines)
  }
  return Object.fromEntries(
    Array.from(
      byStatus,
      ([status, lines]) => [String(status), { description: lines.join("; "), content: problemContent }]
    )
  )
}

/**
 * The operation as published: the derived security, the organization header, and the error
 * responses rebuilt from the classes (the platform's would list `Problem` once per class, the 400 of
 * its own decode errors that svc answers as 422, and the middleware's errors on routes it lets
 * anyone call).
 */
const publish = (method: HttpMethod, spec: EndpointSpec<ReadonlyArray<ProblemClass<any>>>) => {
  const errors = errorResponses([...anyRequestErrors, ...accessErrors(method, spec.policy), ...(spec.errors ?? [])])
  return (operation: Record<string, any>): Record<string, any> => {
    // A route that reads a JSON body refuses another media type (RequestForm.ts).
    const json = operation.requestBody?.content?.["application/json"] !== undefined
    const bodyErrors = json ? errorResponses([UnsupportedMediaType]) : {}
    const successes = Object.fromEntries(
      Object.entries(operation.responses as Record<string, unknown>).filter(([status]) => Number(status) < 400)
    )
    return {
      ...operation,
      security: securityOf(method, spec.policy),
      ...(spec.policy.organization === "none" ? {} : { "x-svc-roles": spec.policy.roles }),
      parameters: spec.policy.organization === "none"
        ? operation.parameters
        : [
          ...operation.parameters,
          spec.policy.organization === "header" ? organizationHeader : pathOrganizationHeader
        ],
      responses: { ...successes, ...errors, ...bodyErrors, ...spec.otherResponses }
    }
  }
}

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
      HttpApiEndpoint.make(method)(name, path)
        .annotate(Policy, spec.policy)
        .annotate(OpenApi.Summary, spec.summary)
        .annotate(OpenApi.Description, `${spec.description}\n\n${accessOf(method, spec.policy)}`)
        .annotate(OpenApi.Transform, publish(method, spec))
    )

export const Endpoint = {
  get: make("GET"),
  post: make("POST"),
  put: make("PUT"),
  patch: make("PATCH"),
  del: make("DELETE")
}

/**
 * The whole document's finish, for the API's OpenApi.Transform: the security schemes the routes
 * refer to, a request body marked optional where all its members are (it may be left out), and
 * only the shapes the routes use (the platform's own decode error is never answered).
 */
export const publishDocument = (document: Record<string, any>): Record<string, any> => {
  const schemas = document.components.schemas as Record<string, any>
  const resolve = (schema: any): any =>
    typeof schema?.$ref === "string" ? resolve(schemas[schema.$ref.replace("#/components/schemas/", "")]) : schema
  for (const item of Object.values(document.paths as Record<string, Record<string, any>>)) {
    for (const operation of Object.values(item)) {
      const body = operation.requestBody?.content?.["application/json"]?.schema
      if (body === undefined) continue
      const object = resolve(body)
      const optional = object?.type === "object" && (object.required ?? []).length === 0 &&
        object.oneOf === undefined && object.anyOf === undefined && object.allOf === undefined
      if (optional) operation.requestBody.required = false
    }
  }
  return { ...document, components: { schemas: used(document.paths, schemas), securitySchemes } }
}

/** The component schemas `paths` refers to, directly or through each other, in their order. */
const used = (paths: unknown, schemas: Record<string, unknown>) => {
  const names = new Set<string>()
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit)
    if (typeof value !== "object" || value === null) return
    for (const [key, child] of Object.entries(value)) {
      if (key === "$ref" && typeof child === "string" && child.startsWith("#/components/schemas/")) {
        const name = child.slice("#/components/schemas/".length)
        if (!names.has(name)) {
          names.add(name)
          visit(schemas[name])
        }
      } else visit(child)
    }
  }
  visit(paths)
  return Object.fromEntries(Object.entries(schemas).filter(([name]) => names.has(name)))
}
