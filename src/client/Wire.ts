/**
 * The client's view of the API: request bodies and query strings in their wire form.
 *
 * The server decodes a body into its full type, where every field with a server default is present
 * (`size`, `image`, `timeout_seconds`, ...). Effect's HttpApiClient encodes a request *from* that
 * type, so a caller would have to pass every defaulted field, and the client would then send the
 * defaults it guessed rather than leave them to the server. Here every schema that the kernel marked
 * as wire input (`RequestBody`, `QueryParams`: src/kernel/http/Dto.ts) is replaced, for the client
 * only, by its encoded side: the caller gives what the OpenAPI document (docs/api.md) shows, leaves out
 * what the server defaults, and the server fills in. One rule for every route.
 */
import type { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpClientError, HttpClientResponse } from "@effect/platform"
import { type Effect, Option, type ParseResult, Schema, SchemaAST } from "effect"
import type { Simplify } from "effect/Types"
import { WireInputId } from "../kernel/http/Dto.js"

/** The client input of a request part: the wire form of a marked schema, else the decoded type. */
export type Wire<A> = [A] extends [never] ? never
  : [A] extends [{ readonly [WireInputId]?: infer Encoded }] ? typeof WireInputId extends keyof A ? Encoded : A
  : A

/** A request part the caller may leave out when none of its members is required. */
type Part<Key extends string, T> = [T] extends [never] ? {}
  : {} extends T ? { readonly [K in Key]?: T }
  : { readonly [K in Key]: T }

/**
 * What one call takes: HttpApiEndpoint.ClientRequest with the query string and body in their wire
 * form, and every part whose members are all optional (most `headers`, a stop's body) optional
 * itself; a call that then needs nothing takes no argument.
 */
export type WireRequest<Path, UrlParams, Payload, Headers, WithResponse extends boolean> =
  & ([Path] extends [void] ? {} : { readonly path: Path })
  & Part<"urlParams", Wire<UrlParams>>
  & Part<"headers", Headers>
  & Part<"payload", Wire<Payload>> extends infer Request
  ? {} extends Request ? void | (Request & { readonly withResponse?: WithResponse })
  : Request & { readonly withResponse?: WithResponse }
  : never

export type WireMethod<Endpoint, E, GroupError> = [Endpoint] extends [
  HttpApiEndpoint.HttpApiEndpoint<
    infer _Name,
    infer _Method,
    infer Path,
    infer UrlParams,
    infer Payload,
    infer Headers,
    infer Success,
    infer Error,
    infer _R,
    infer _RE
  >
] ? <WithResponse extends boolean = false>(
    request: Simplify<WireRequest<Path, UrlParams, Payload, Headers, WithResponse>>
  ) => Effect.Effect<
    WithResponse extends true ? [Success, HttpClientResponse.HttpClientResponse] : Success,
    Error | GroupError | E | HttpClientError.HttpClientError | ParseResult.ParseError
  >
  : never

/** HttpApiClient.Client of `Api`'s groups with every method taking a `WireRequest`. */
export type WireClient<Api, E = never> = Api extends HttpApi.HttpApi<infer _Id, infer Groups, infer ApiError, infer _R>
  ? {
    readonly [Group in Extract<Groups, { readonly topLevel: false }> as HttpApiGroup.HttpApiGroup.Name<Group>]:
      Group extends HttpApiGroup.HttpApiGroup<infer _GroupId, infer Endpoints, infer GroupError, infer _GroupR> ? {
          readonly [Endpoint in Endpoints as HttpApiEndpoint.HttpApiEndpoint.Name<Endpoint>]: WireMethod<
            Endpoint,
            E | ApiError,
            GroupError
          >
        }
        : never
  }
  : never

/** The struct the kernel named as this schema's wire form (through filters put on top of it), if any. */
const wireStruct = (ast: SchemaAST.AST): Schema.Schema.Any | undefined => {
  const marked = ast.annotations[WireInputId]
  if (Schema.isSchema(marked)) return marked
  return SchemaAST.isRefinement(ast) ? wireStruct(ast.from) : undefined
}

/**
 * The encoded side of the marked struct, with the checks that side carries (a NUL byte, a length, a
 * name's pattern, an unknown member: what the door refuses anyway), so the client refuses such a
 * request with a ParseError before it sends anything; defaults and the checks on decoded values
 * are the server's.
 */
const wireSchema = (schema: Schema.Schema.Any): Schema.Schema.Any => {
  const struct = wireStruct(schema.ast)
  return struct === undefined ? schema : Schema.encodedBoundSchema(struct)
}

const wireEndpoint = (
  endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
): HttpApiEndpoint.HttpApiEndpoint.AnyWithProps => {
  let result = endpoint
  if (Option.isSome(endpoint.payloadSchema)) {
    result = result.setPayload(wireSchema(endpoint.payloadSchema.value) as any) as any
  }
  if (Option.isSome(endpoint.urlParamsSchema)) {
    result = result.setUrlParams(wireSchema(endpoint.urlParamsSchema.value) as any) as any
  }
  return result
}

/** The same API with every marked body and query string in its wire form (for HttpApiClient only). */
export const wireApi = <Api extends HttpApi.HttpApi.Any>(api: Api): Api => {
  const withProps = api as unknown as HttpApi.HttpApi.AnyWithProps
  let result = withProps
  for (const group of Object.values(withProps.groups)) {
    // `add` with an endpoint's own name replaces it in place; order, annotations and middleware stay.
    const wired = Object.values(group.endpoints).reduce(
      (g: HttpApiGroup.HttpApiGroup.AnyWithProps, endpoint) => g.add(wireEndpoint(endpoint)) as any,
      group
    )
    result = result.add(wired) as any
  }
  return result as unknown as Api
}

/**
 * The runtime half of `WireRequest`: HttpApiClient encodes `headers`, `urlParams` and `payload`
 * whenever the endpoint has a schema for them, so a part left out is given as `{}`.
 */
export const withOptionalParts = <Client>(
  client: Record<string, Record<string, (request: object) => unknown>>
): Client =>
  Object.fromEntries(
    Object.entries(client).map(([group, methods]) => [
      group,
      Object.fromEntries(
        Object.entries(methods).map(([name, method]) => [
          name,
          (request?: object) => method({ headers: {}, urlParams: {}, payload: {}, ...request })
        ])
      )
    ])
  ) as Client
