/**
 * One mapping from every failure of a request to its problem-details response: API errors keep
 * their status and code, request decoding errors become 422 with `field_errors`, unknown routes
 * 404, oversized bodies 413, and anything unexpected 500 with the correlation id and nothing else.
 */
import { HttpApiError, HttpServerError, HttpServerResponse, Multipart } from "@effect/platform"
import { Cause, Effect, Option } from "effect"
import { InternalError } from "./Errors.js"
import { type FieldError, type ProblemBody, problemContentType, problemType, specOf, toBody } from "./Problem.js"

export const respond = (body: ProblemBody, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(body, { status: body.status, contentType: problemContentType, headers })

const simple = (
  status: number,
  code: string,
  title: string,
  detail: string,
  extra: Partial<ProblemBody> = {},
  headers: Record<string, string> = {}
) => respond({ type: problemType(code), title, status, code, detail, ...extra }, headers)

export const invalidRequest = (fieldErrors: ReadonlyArray<FieldError>) =>
  simple(422, "invalid_request", "Invalid request", "The request is not valid; see field_errors", {
    field_errors: fieldErrors
  })

export const bodyTooLarge = (maxBytes: number) =>
  // The unread rest of the body must not be taken for a next request on this connection.
  simple(413, "body_too_large", "Request body too large", `The request body is larger than ${maxBytes} bytes`, {}, {
    connection: "close"
  })

/**
 * One entry per field. A union (such as a list of allowed literals) reports one issue per member;
 * those become a single "Expected a or b, actual c" message. An optional member's "Expected
 * undefined" is left out when the member has a more telling issue (its value, or one inside it),
 * and a member the body does not have reads "unknown member".
 */
export const fieldErrorsOf = (
  issues: ReadonlyArray<
    { readonly _tag?: string; readonly path: ReadonlyArray<PropertyKey>; readonly message: string }
  >
) => {
  const byField = new Map<string, Array<string>>()
  const fieldOf = (path: ReadonlyArray<PropertyKey>) => (path.length > 0 ? path.map(String).join(".") : "body")
  const told = issues.filter((issue) => !issue.message.startsWith("Expected undefined, actual "))
  for (const issue of issues) {
    if (
      issue.message.startsWith("Expected undefined, actual ") && told.some((other) => within(other.path, issue.path))
    ) {
      continue
    }
    const field = shortValue(fieldOf(issue.path), 200)
    const message = clipActual(issue._tag === "Unexpected" ? unknownMember(issue.message) : issue.message)
    const messages = byField.get(field) ?? []
    if (!messages.includes(message)) messages.push(message)
    byField.set(field, messages)
  }
  return Array.from(
    byField,
    ([field, messages]): FieldError => ({ field, message: shortValue(mergeExpectations(messages), 1000) })
  )
}

/** At most `max` characters of a value a problem quotes back: a refused 200 KB script is not echoed. */
export const shortValue = (value: string, max = 64) =>
  value.length <= max ? value : `${value.slice(0, max)}… (${value.length} characters)`

/** "Expected …, actual <value>" with only a short prefix of the value. */
const clipActual = (message: string) => {
  const at = message.lastIndexOf(", actual ")
  if (at < 0) return message
  const actual = message.slice(at + ", actual ".length)
  return actual.length <= 64 ? message : `${message.slice(0, at)}, actual ${shortValue(actual)}`
}

/** Whether `path` is `parent` or lies inside it. */
const within = (path: ReadonlyArray<PropertyKey>, parent: ReadonlyArray<PropertyKey>) =>
  path.length >= parent.length && parent.every((key, i) => key === path[i])

/** "is unexpected, expected: "a" | "b"" (Effect's words for an excess property) as api.md would say it. */
const unknownMember = (message: string) => {
  const expected = /^is unexpected, expected: (.+)$/s.exec(message)?.[1]
  return expected === undefined || expected === "no member"
    ? "unknown member: this route takes no body"
    : `unknown member (expected ${expected})`
}

const expectation = /^Expected (.+), actual (.+)$/s

const mergeExpectations = (messages: ReadonlyArray<string>) => {
  const parsed = messages.map((message) => expectation.exec(message))
  if (messages.length < 2 || parsed.some((match) => match === null || match[2] !== parsed[0]![2])) {
    return messages.join("; ")
  }
  return `Expected ${parsed.map((match) => match![1]).join(" or ")}, actual ${parsed[0]![2]}`
}

const fromDecodeError = (error: HttpApiError.HttpApiDecodeError) => invalidRequest(fieldErrorsOf(error.issues))

/** How deeply a JSON body may nest (RequestEdge refuses deeper ones): no request of the API nests more than a few levels. */
export const maxJsonDepth = 64

/** A JSON body nested deeper than `maxJsonDepth`. */
export class NestedTooDeeply extends SyntaxError {
  constructor() {
    super(`nests deeper than ${maxJsonDepth} levels`)
  }
}

/** Failures of reading the body are defects inside HttpApiBuilder; these are the client's fault. */
const fromBodyDefect = (defect: unknown, maxBytes: number): Option.Option<HttpServerResponse.HttpServerResponse> => {
  // A body sent as multipart/form-data is parsed as such before its schema sees it (found by the fuzz).
  if (defect instanceof Multipart.MultipartError) {
    return Option.some(
      defect.reason === "BodyTooLarge"
        ? bodyTooLarge(maxBytes)
        : invalidRequest([{ field: "body", message: "is not valid multipart/form-data; send JSON" }])
    )
  }
  if (!HttpServerError.isServerError(defect) || defect._tag !== "RequestError") return Option.none()
  const cause = defect.cause
  if (cause instanceof Error && cause.message === "maxBytes exceeded") return Option.some(bodyTooLarge(maxBytes))
  if (cause instanceof NestedTooDeeply) return Option.some(invalidRequest([{ field: "body", message: cause.message }]))
  if (cause instanceof SyntaxError) {
    return Option.some(invalidRequest([{ field: "body", message: "is not valid JSON" }]))
  }
  return Option.none()
}

export const fromCause = (cause: Cause.Cause<unknown>, correlationId: string, maxBytes: number) => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    const spec = specOf(error)
    if (spec !== undefined) {
      const body = toBody(error as any, spec)
      const retryAfter = (error as { retry_after_seconds?: number }).retry_after_seconds
      return Effect.succeed(respond(body, retryAfter !== undefined ? { "retry-after": String(retryAfter) } : {}))
    }
    if (error instanceof HttpApiError.HttpApiDecodeError) return Effect.succeed(fromDecodeError(error))
    if (HttpServerError.isServerError(error) && error._tag === "RouteNotFound") {
      return Effect.succeed(simple(404, "resource_not_found", "Resource not found", "No such route"))
    }
  }
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect)) {
    const response = fromBodyDefect(defect.value, maxBytes)
    if (Option.isSome(response)) return Effect.succeed(response.value)
  }
  // An interrupted-only cause holds no failure, so it is a Cause<never>.
  if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
  const internal = new InternalError({ detail: "An internal error occurred; quote the correlation id" })
  return Effect.logError("internal error", cause).pipe(
    Effect.annotateLogs("correlation_id", correlationId),
    Effect.as(respond({ ...toBody(internal, specOf(internal)!), correlation_id: correlationId }))
  )
}
