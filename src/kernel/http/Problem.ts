/**
 * Problem details (RFC 9457) as svc answers them: `application/problem+json` with
 * `{type, title, status, code, detail, field_errors?, correlation_id?}`.
 *
 * Every error the API can answer is a `Schema.TaggedError` whose tag is the error code and whose
 * annotations carry its status and title. The same class is used by services (as a typed failure),
 * by the server (turned into a response by one mapping) and by the typed client (decoded back from
 * the problem body through `wire`).
 */
import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import type * as NodeStream from "node:stream"

export const FieldError = Schema.Struct({ field: Schema.String, message: Schema.String }).annotations({
  identifier: "FieldError"
})
export type FieldError = typeof FieldError.Type

export const ProblemBody = Schema.Struct({
  type: Schema.String,
  title: Schema.String,
  status: Schema.Number,
  code: Schema.String,
  detail: Schema.String,
  field_errors: Schema.optional(Schema.Array(FieldError)),
  correlation_id: Schema.optional(Schema.String)
}).annotations({ identifier: "Problem", description: "Problem details (RFC 9457)" })
export type ProblemBody = typeof ProblemBody.Type

export const problemContentType = "application/problem+json"

export const problemType = (code: string) => `urn:svc:problem:${code}`

/** The fields every problem error carries; `detail` defaults to the title. */
export const ProblemFields = {
  detail: Schema.optional(Schema.String),
  field_errors: Schema.optional(Schema.Array(FieldError))
}

const ProblemSpecId = Symbol.for("svc/api/Problem/ProblemSpec")

export interface ProblemSpec {
  readonly status: number
  readonly title: string
}

/** Annotations for a problem error class: its HTTP status and title. */
export const problem = <A>(status: number, title: string): Schema.Annotations.Schema<A> => ({
  ...HttpApiSchema.annotations<A>({ status }),
  [ProblemSpecId]: { status, title } satisfies ProblemSpec
})

/**
 * The one way to declare an API error: tag = code, with its status and title.
 * `export class NameTaken extends ProblemError<NameTaken>()("name_taken", 409, "Name taken") {}`
 */
export const ProblemError =
  <Self = never>() =>
  <const Tag extends string, const Extra extends Schema.Struct.Fields = {}>(
    tag: Tag,
    status: number,
    title: string,
    extra?: Extra
  ) => Schema.TaggedError<Self>()(tag, { ...ProblemFields, ...(extra ?? {}) as Extra }, problem(status, title))

export interface ProblemError {
  readonly _tag: string
  readonly detail?: string | undefined
  readonly field_errors?: ReadonlyArray<FieldError> | undefined
}

interface AnnotatedAst {
  readonly annotations?: Record<symbol, unknown>
  readonly to?: AnnotatedAst
}

/** A class schema's AST is a transformation; its own annotations sit on the declaration it decodes to. */
const specOfAst = (ast: AnnotatedAst | undefined): ProblemSpec | undefined =>
  (ast?.annotations?.[ProblemSpecId] ?? ast?.to?.annotations?.[ProblemSpecId]) as ProblemSpec | undefined

/** The status and title a problem error class declares (the published document lists them per route). */
export const specOfClass = (cls: { readonly ast: unknown }): ProblemSpec | undefined =>
  specOfAst(cls.ast as AnnotatedAst)

/** The status and title of a problem error instance, if it is one. */
export const specOf = (error: unknown): ProblemSpec | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  return specOfAst((error as { constructor?: { ast?: AnnotatedAst } }).constructor?.ast)
}

export const toBody = (error: ProblemError, spec: ProblemSpec): ProblemBody => ({
  type: problemType(error._tag),
  title: spec.title,
  status: spec.status,
  code: error._tag,
  detail: error.detail ?? spec.title,
  ...(error.field_errors !== undefined ? { field_errors: error.field_errors } : {})
})

export type ProblemClass<E extends ProblemError> = Schema.Schema<E, any> & {
  readonly ast: Schema.Schema.Any["ast"]
}

/**
 * The wire form of a problem error class, for the API definition: the problem body on the wire,
 * the tagged error in Effect code. Decoding fails when the body's code is not this class's tag,
 * so a union of wire schemas picks the right class on the client.
 */
export const wire = <E extends ProblemError>(cls: ProblemClass<E>) => {
  const spec = specOfAst(cls.ast as AnnotatedAst)
  if (spec === undefined) throw new Error("wire: the class has no problem(status, title) annotations")
  return Schema.transform(ProblemBody, cls as Schema.Schema<E, any>, {
    strict: false,
    decode: (body) => ({
      _tag: body.code,
      detail: body.detail,
      ...(body.field_errors !== undefined ? { field_errors: body.field_errors } : {})
    }),
    encode: (error: any) => toBody(error, spec)
  }).pipe(
    HttpApiSchema.withEncoding({ kind: "Json", contentType: problemContentType }),
    Schema.annotations(HttpApiSchema.annotations({ status: spec.status }))
  )
}

/** A problem answered on a raw socket, for an upgrade refused before any WebSocket exists. */
export const rawProblem = (socket: NodeStream.Duplex, body: ProblemBody) => {
  const text = JSON.stringify(body)
  socket.end(
    `HTTP/1.1 ${body.status} ${body.title}\r\ncontent-type: ${problemContentType}\r\n` +
      `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`
  )
}
