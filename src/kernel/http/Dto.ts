/** Shapes shared by several groups. */
import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

export const Timestamp = Schema.String.annotations({ description: "RFC 3339 time", format: "date-time" })
export const NullableTimestamp = Schema.NullOr(Timestamp)
export const Uuid = Schema.UUID

export const iso = (millis: number) => new Date(millis).toISOString()
export const isoOrNull = (millis: number | null) => (millis === null ? null : iso(millis))

/**
 * Marks a request schema (a body or a query string) whose client input is its wire form: the JSON or
 * strings that api.md and the OpenAPI document show, where a field with a server default may be left
 * out. The annotation tells the typed client (src/client/Wire.ts) at run time; `WireInput<Encoded>`
 * says the same to the type checker: an optional phantom member of the decoded type, never present
 * in a value, that carries the encoded type which the endpoint's own types do not keep.
 */
export const WireInputId: unique symbol = Symbol.for("svc/http/WireInput")
export interface WireInput<Encoded> {
  readonly [WireInputId]?: Encoded
}

/** A struct schema whose client input is its wire form (see `WireInputId`). */
export type WireTagged<S extends Schema.Schema.Any> = Schema.Schema<
  Schema.Schema.Type<S> & WireInput<Schema.Schema.Encoded<S>>,
  Schema.Schema.Encoded<S>,
  Schema.Schema.Context<S>
>

const wireTagged = <S extends Schema.Schema.Any>(schema: S): WireTagged<S> =>
  schema.annotations({ [WireInputId]: true }) as unknown as WireTagged<S>

/**
 * A request body: every invalid field is reported (a 422 lists all of them in `field_errors`, not
 * only the first one found); unknown fields are ignored so clients may send more than we read.
 */
export const RequestBody = <Fields extends Schema.Struct.Fields>(fields: Fields) =>
  wireTagged(Schema.Struct(fields).annotations({ parseOptions: { errors: "all", onExcessProperty: "ignore" } }))

/** The query string of a route, as a client gives it: strings, and fields with defaults may be left out. */
export const QueryParams = <Fields extends Schema.Struct.Fields>(fields: Fields) => wireTagged(Schema.Struct(fields))

export const IdempotencyHeaders = Schema.Struct({ "idempotency-key": Schema.optional(Schema.String) })

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
