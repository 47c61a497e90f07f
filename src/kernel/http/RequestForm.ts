/**
 * The form of a request a route can read, checked once its caller may call it (AuthorizationLive):
 * a route that reads a JSON body refuses another media type (415 `unsupported_media_type`, rather
 * than a 422 about the body read as text), and a route refuses query parameters it does not
 * declare (422 naming each, as an unknown body member is refused).
 */
import { HttpApiSchema } from "@effect/platform"
import type { HttpApiEndpoint, HttpServerRequest } from "@effect/platform"
import { Context, Effect, Option, type SchemaAST } from "effect"
import { InvalidRequest, UnsupportedMediaType } from "./Errors.js"
import { shortValue } from "./Problems.js"

/**
 * Annotations of an endpoint whose request others shape: `form` also takes
 * `application/x-www-form-urlencoded` (OAuth clients, RFC 8628); `foreignQuery` takes query
 * parameters it does not declare (a sign-in provider's redirect adds its own, such as `iss`).
 */
export class RequestFormNote extends Context.Tag("svc/kernel/http/RequestFormNote")<
  RequestFormNote,
  { readonly form?: boolean; readonly foreignQuery?: boolean }
>() {}

export interface RequestForm {
  /** The body must be JSON (the route's payload is JSON-encoded). */
  readonly json: boolean
  /** With `json`, a form-encoded body is taken too. */
  readonly form: boolean
  /** The query parameters it declares; undefined when any is taken. */
  readonly query: ReadonlySet<string> | undefined
}

/** The member names of a URL parameters schema, or undefined when it takes any (an index signature). */
const namesOf = (ast: SchemaAST.AST): Set<string> | undefined => {
  switch (ast._tag) {
    case "TypeLiteral":
      return ast.indexSignatures.length > 0 ? undefined : new Set(ast.propertySignatures.map((p) => String(p.name)))
    case "Transformation":
      return namesOf(ast.from)
    case "Refinement":
      return namesOf(ast.from)
    case "Suspend":
      return namesOf(ast.f())
    case "Union": {
      const all = new Set<string>()
      for (const member of ast.types) {
        const names = namesOf(member)
        if (names === undefined) return undefined
        for (const name of names) all.add(name)
      }
      return all
    }
    default:
      return undefined
  }
}

export const requestFormOf = (endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps): RequestForm => {
  const note: RequestFormNote["Type"] = Option.getOrElse(
    Context.getOption(endpoint.annotations, RequestFormNote),
    () => ({})
  )
  const payload = Option.getOrUndefined(endpoint.payloadSchema)
  const json = payload !== undefined && endpoint.method !== "GET" &&
    HttpApiSchema.getEncoding(payload.ast).kind === "Json"
  const query = note.foreignQuery === true
    ? undefined
    : Option.match(endpoint.urlParamsSchema, { onNone: () => new Set<string>(), onSome: (s) => namesOf(s.ast) })
  return { json, form: note.form === true, query }
}

const jsonType = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/

/** Whether the request carries a body at all (an empty one may say any type). */
const hasBody = (request: HttpServerRequest.HttpServerRequest) => {
  const length = request.headers["content-length"]
  return length === undefined ? request.headers["transfer-encoding"] !== undefined : length !== "0"
}

/** Refuses what `form` says the route cannot read. A body without a content type is read as JSON. */
export const checkRequestForm = (
  request: HttpServerRequest.HttpServerRequest,
  form: RequestForm
): Effect.Effect<void, UnsupportedMediaType | InvalidRequest> => {
  if (form.json && hasBody(request)) {
    const type = request.headers["content-type"]?.trim().toLowerCase()
    if (
      type !== undefined && !jsonType.test(type) &&
      !(form.form && type.startsWith("application/x-www-form-urlencoded"))
    ) {
      return Effect.fail(
        new UnsupportedMediaType({
          detail: `This route reads a JSON body (Content-Type: application/json${
            form.form ? " or application/x-www-form-urlencoded" : ""
          }), not ${shortValue(type)}`
        })
      )
    }
  }
  const mark = request.url.indexOf("?")
  if (form.query === undefined || mark < 0) return Effect.void
  const unknown = new Set<string>()
  for (const name of new URLSearchParams(request.url.slice(mark + 1)).keys()) {
    if (!form.query.has(name)) unknown.add(name)
  }
  if (unknown.size === 0) return Effect.void
  const expected = form.query.size === 0
    ? "this route takes no query parameters"
    : `expected ${[...form.query].map((name) => `"${name}"`).join(" | ")}`
  return Effect.fail(
    new InvalidRequest({
      field_errors: [...unknown].slice(0, 10).map((name) => ({
        field: shortValue(name),
        message: `unknown query parameter (${expected})`
      }))
    })
  )
}
