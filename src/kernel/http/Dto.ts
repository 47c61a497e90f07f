/** Shapes shared by several groups. */
import { HttpApiSchema, type HttpServerRequest } from "@effect/platform"
import { Array as Arr, Effect, ParseResult, Schema, SchemaAST as AST } from "effect"
import { InvalidRequest } from "./Errors.js"
import { fieldErrorsOf } from "./Problems.js"

export const Timestamp = Schema.String.annotations({ description: "RFC 3339 time", format: "date-time" })
export const NullableTimestamp = Schema.NullOr(Timestamp)
export const Uuid = Schema.UUID

export const iso = (millis: number) => new Date(millis).toISOString()
export const isoOrNull = (millis: number | null) => (millis === null ? null : iso(millis))

/**
 * Marks a request schema (a body or a query string) whose client input is its wire form: the JSON or
 * strings that the OpenAPI document (docs/api.md) shows, where a field with a server default may be left
 * out. The annotation (the struct whose encoded side that is) tells the typed client
 * (src/client/Wire.ts) at run time; `WireInput<Encoded>` says the same to the type checker: an
 * optional phantom member of the decoded type, never present in a value, that carries the encoded
 * type which the endpoint's own types do not keep.
 */
export const WireInputId: unique symbol = Symbol.for("svc/http/WireInput")
export interface WireInput<Encoded> {
  readonly [WireInputId]?: Encoded
}

/** A request schema whose client input is the encoded side of `Wire` (see `WireInputId`). */
export type WireTagged<S extends Schema.Schema.Any, Wire extends Schema.Schema.Any> = Schema.Schema<
  Schema.Schema.Type<S> & WireInput<Schema.Schema.Encoded<Wire>>,
  Schema.Schema.Encoded<S>,
  Schema.Schema.Context<S>
>

/** `schema`, annotated with the struct whose encoded side a client sends. */
const wireTagged = <S extends Schema.Schema.Any, Wire extends Schema.Schema.Any>(
  schema: S,
  wire: Wire
): WireTagged<S, Wire> => schema.annotations({ [WireInputId]: wire }) as unknown as WireTagged<S, Wire>

/**
 * Every body route's payload, so the door is one mechanism (extensions.md §4):
 * - every invalid field is reported (a 422 lists all of them in `field_errors`, not only the first);
 * - an unknown member is refused, at any depth, and named in `field_errors`: a typo such as
 *   `internet_acess` must never be dropped silently;
 * - an empty body (no bytes, with or without a content type) reads as `{}`, so a body whose members
 *   are all optional may be left out, and one with required members names each missing one.
 * The published document shows the object itself (`additionalProperties: false`), with `jsonSchema`
 * added (such as exec's rule: one of command and shell).
 */
export const RequestBody = <Fields extends Schema.Struct.Fields>(
  fields: Fields,
  /** What the document adds to the object's JSON Schema: a rule between members a filter checks. */
  jsonSchema?: object
) => {
  const struct = Schema.Struct(fields).annotations({
    parseOptions: { errors: "all", onExcessProperty: "error" },
    ...(jsonSchema === undefined ? {} : { jsonSchema })
  })
  return wireTagged(
    Schema.transform(Schema.Unknown, struct, {
      strict: false,
      decode: (body) => (isEmptyBody(body) ? {} : body),
      encode: (body) => body
    }).annotations({ [AST.SurrogateAnnotationId]: struct.ast }),
    struct
  )
}

/** The query string of a route, as a client gives it: strings, and fields with defaults may be left out. */
export const QueryParams = <Fields extends Schema.Struct.Fields>(fields: Fields) => {
  const struct = Schema.Struct(fields)
  return wireTagged(struct, struct)
}

/** What an empty request body reads as: `null` as JSON, `""` as text, no bytes otherwise. */
const isEmptyBody = (body: unknown) =>
  body === null || body === undefined || body === "" || (body instanceof Uint8Array && body.length === 0)

/**
 * The body of a route that takes none: no bytes, or `{}`. Any member is refused as an unknown member
 * of any other body is (422 naming it), so a member meant for another route is never dropped. The
 * authorization middleware applies it to every POST, PUT, PATCH and DELETE without a payload, once
 * the caller may call the route (src/kernel/http/AuthorizationLive.ts).
 */
export const NoBody = Schema.transformOrFail(Schema.Unknown, Schema.Undefined, {
  strict: true,
  decode: (body, _, ast) => {
    if (isEmptyBody(body)) return ParseResult.succeed(undefined)
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      return ParseResult.fail(new ParseResult.Type(ast, body, "This route takes no body"))
    }
    const members = Object.keys(body)
    if (!Arr.isNonEmptyArray(members)) return ParseResult.succeed(undefined)
    return ParseResult.fail(
      new ParseResult.Composite(
        ast,
        body,
        Arr.map(members, (member) =>
          new ParseResult.Pointer(
            member,
            body,
            new ParseResult.Unexpected((body as Record<string, unknown>)[member], "is unexpected, expected: no member")
          ))
      )
    )
  },
  encode: () => ParseResult.succeed({})
})

const decodeNoBody = Schema.decodeUnknown(NoBody)

/** Reads the body of a route that takes none: nothing, or `{}`, else 422 naming each member. */
export const refuseBody = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<void, InvalidRequest> => {
  const length = request.headers["content-length"]
  if (length === "0" || (length === undefined && request.headers["transfer-encoding"] === undefined)) {
    return Effect.void
  }
  const contentType = request.headers["content-type"]?.toLowerCase() ?? "application/json"
  return Effect.flatMap(Effect.orDie(request.text), (text) => {
    if (text.trim() === "") return Effect.void
    if (!contentType.includes("json")) {
      return new InvalidRequest({ field_errors: [{ field: "body", message: "This route takes no body" }] })
    }
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      return new InvalidRequest({ field_errors: [{ field: "body", message: "is not valid JSON" }] })
    }
    return decodeNoBody(body).pipe(
      Effect.mapError((error) =>
        new InvalidRequest({ field_errors: fieldErrorsOf(ParseResult.ArrayFormatter.formatErrorSync(error)) })
      ),
      Effect.asVoid
    )
  })
}

// Strings a machine takes. A C string ends at its first NUL byte, so an argument, a path or an
// environment entry holding one cannot reach the machine as sent; the kernel also bounds one
// argument or environment entry and one path. The door refuses them (422) rather than accept an
// operation that can never succeed.

const utf8Bytes = (text: string) => Buffer.byteLength(text, "utf8")

/** A string with no NUL byte: what a process, a file name or an environment entry can hold. */
export const MachineString = Schema.String.pipe(
  Schema.filter((text) => !text.includes("\0") || "must not contain a NUL byte (\\u0000)", {
    jsonSchema: { pattern: "^[^\\u0000]*$" }
  })
).annotations({ description: "no NUL byte" })

/** Linux's MAX_ARG_STRLEN (32 pages of 4 KiB) holds one argument or `NAME=value` with its final NUL. */
export const maxArgumentBytes = 128 * 1024 - 1

/** One argument of a command (or a shell line, a setup script: they run as `sh -c <text>`). */
export const MachineArgument = MachineString.pipe(
  Schema.filter(
    (text) =>
      utf8Bytes(text) <= maxArgumentBytes || `at most ${maxArgumentBytes} bytes (the kernel's limit for one argument)`,
    {
      jsonSchema: { maxLength: maxArgumentBytes }
    }
  )
).annotations({ description: `no NUL byte, at most ${maxArgumentBytes} bytes` })

/** Linux's PATH_MAX (4096) holds a path with its final NUL; NAME_MAX bounds each of its names. */
export const maxPathBytes = 4095
export const maxPathNameBytes = 255

/** A path in a machine, absolute or relative. */
export const MachinePath = MachineString.pipe(
  Schema.filter((path) => path.length > 0 || "must not be empty", { jsonSchema: { minLength: 1 } }),
  Schema.filter((path) => utf8Bytes(path) <= maxPathBytes || `at most ${maxPathBytes} bytes`, {
    jsonSchema: { maxLength: maxPathBytes }
  }),
  Schema.filter((path) =>
    path.split("/").every((name) => utf8Bytes(name) <= maxPathNameBytes) ||
    `each name between slashes at most ${maxPathNameBytes} bytes`, { jsonSchema: { maxLength: maxPathBytes } })
).annotations({
  description: `a path: no NUL byte, at most ${maxPathBytes} bytes, each name at most ${maxPathNameBytes} bytes`
})

/** An absolute path in a machine. */
export const AbsoluteMachinePath = MachinePath.pipe(
  Schema.filter((path) => path.startsWith("/") || "must be an absolute path", { jsonSchema: { pattern: "^/" } })
).annotations({
  description:
    `an absolute path: no NUL byte, at most ${maxPathBytes} bytes, each name at most ${maxPathNameBytes} bytes`
})

export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(
    Schema.String.annotations({
      description: "A unique key per change: the same key and body answer the first operation again; the same key " +
        "with another body answers 409 idempotency_conflict. Scoped to the organization."
    })
  )
})

export const AcceptedChange = Schema.Struct({
  operation_id: Uuid,
  machine_id: Uuid,
  status: Schema.Literal("pending"),
  operation_url: Schema.String,
  requested_action: Schema.String
}).annotations({ identifier: "AcceptedChange" })

export type AcceptedChange = typeof AcceptedChange.Type

/** What an accepting service answers; the route adds where to follow it. */
export interface Accepted {
  readonly operation_id: string
  readonly machine_id: string
  readonly requested_action: string
}

export const acceptedChange = (baseUrl: string) => (accepted: Accepted): AcceptedChange => ({
  ...accepted,
  status: "pending",
  operation_url: `${baseUrl}/v1/operations/${accepted.operation_id}`
})

export const EventStream = Schema.String.pipe(
  HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" })
)
