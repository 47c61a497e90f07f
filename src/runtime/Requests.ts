/**
 * What each operation kind carries in its stored request: a Schema per kind. The actor decodes a
 * row's request once, before it runs it; a request that does not decode fails the operation with
 * `invalid_request` instead of reaching the driver half understood.
 */
import { Either, ParseResult, Schema } from "effect"
import { type OperationKind, StopReason } from "../kernel/domain/MachineStates.js"

/** create, fork and restore: the new machine's settings and, for fork/restore/template, its source. */
const MakesMachine = Schema.Struct({
  start: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  setup_script: Schema.optional(Schema.NullOr(Schema.String)),
  source_machine_id: Schema.optional(Schema.String),
  snapshot_id: Schema.optional(Schema.String),
  template_snapshot_id: Schema.optional(Schema.String)
})

const Nothing = Schema.Struct({})

const Port = Schema.Int.pipe(Schema.between(1, 65535))

export const requestSchemas = {
  create: MakesMachine,
  fork: MakesMachine,
  restore: MakesMachine,
  start: Nothing,
  restart: Nothing,
  delete: Nothing,
  snapshot: Nothing,
  stop: Schema.Struct({
    force: Schema.optionalWith(Schema.Boolean, { default: () => false }),
    stop_reason: Schema.optionalWith(StopReason, { default: () => "api" as const })
  }),
  exec: Schema.Struct({
    command: Schema.optional(Schema.Array(Schema.String)),
    shell: Schema.optional(Schema.String),
    cwd: Schema.optional(Schema.String),
    env: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
    stdin_base64: Schema.optional(Schema.String),
    timeout_seconds: Schema.optionalWith(Schema.Int, { default: () => 300 })
  }),
  write_file: Schema.Struct({
    path: Schema.String,
    data_base64: Schema.String,
    mode: Schema.optional(Schema.String),
    append: Schema.optionalWith(Schema.Boolean, { default: () => false })
  }),
  read_file: Schema.Struct({
    ranges: Schema.Array(Schema.Struct({ path: Schema.String, offset: Schema.Int, size: Schema.Int }))
  }),
  install_ssh_key: Schema.Struct({ public_key: Schema.String }),
  set_internet_access: Schema.Struct({ enabled: Schema.Boolean }),
  // The environment is the machine's; its id is kept on the row for the operation's readers.
  apply_environment: Schema.Struct({ version: Schema.Int, environment_id: Schema.optional(Schema.String) }),
  expose_port: Schema.Struct({ port: Port, public: Schema.optionalWith(Schema.Boolean, { default: () => false }) }),
  unexpose_port: Schema.Struct({ port: Port })
} satisfies Record<OperationKind, Schema.Schema<any, any>>

export type RequestOf<K extends OperationKind> = (typeof requestSchemas)[K]["Type"]

/** What an accept stores for `K` (defaults not yet applied): the one request type from route to row. */
export type StoredRequestOf<K extends OperationKind> = (typeof requestSchemas)[K]["Encoded"]

/** An operation's request with its kind, so a switch on `kind` narrows `request`. */
export type DecodedRequest = {
  [K in OperationKind]: { readonly kind: K; readonly request: RequestOf<K> }
}[OperationKind]

const decoders = Object.fromEntries(
  Object.entries(requestSchemas).map((
    [kind, schema]
  ) => [kind, Schema.decodeUnknownEither(schema as Schema.Schema<any, any>)])
) as Record<OperationKind, (input: unknown) => Either.Either<unknown, ParseResult.ParseError>>

/** The stored request of `operation`, decoded; Left with a message when it is not what its kind carries. */
export const decodeRequest = (
  operation: { readonly kind: OperationKind; readonly request: string }
): Either.Either<DecodedRequest, string> => {
  let json: unknown
  try {
    json = JSON.parse(operation.request)
  } catch {
    return Either.left(`the ${operation.kind} request is not JSON`)
  }
  return Either.match(decoders[operation.kind](json), {
    onLeft: (error) =>
      Either.left(`the ${operation.kind} request: ${ParseResult.TreeFormatter.formatErrorSync(error)}`),
    onRight: (request) => Either.right({ kind: operation.kind, request } as DecodedRequest)
  })
}
