/** Machines (extensions.md §5): the resource, its settings, and the routes that accept operations. */
import { HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { MachineSize as Size, MachineState, StopReason } from "../kernel/domain/MachineStates.js"
import { Authorization } from "../kernel/http/Authorization.js"
import {
  AcceptedChange,
  IdempotencyHeaders,
  NullableTimestamp,
  QueryParams,
  RequestBody,
  Timestamp,
  Uuid
} from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { acceptErrors, stateErrors } from "../kernel/http/ErrorLists.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { LimitExceeded, MachineDeleted, NameTaken } from "../kernel/http/MachineErrors.js"
import { pageFields } from "../kernel/http/Pagination.js"
import { policy, type PolicySpec } from "../kernel/http/Policy.js"
import type { ProblemClass } from "../kernel/http/Problem.js"
import { NoSnapshot, SnapshotPending } from "../snapshots/Errors.js"

export const MachineDto = Schema.Struct({
  id: Uuid,
  organization_id: Uuid,
  created_by: Uuid,
  name: Schema.String,
  state: MachineState,
  size: Size,
  image: Schema.String,
  environment_id: Schema.NullOr(Uuid),
  environment_version: Schema.NullOr(Schema.Int),
  internet_access: Schema.Boolean,
  auto_stop_seconds: Schema.NullOr(Schema.Int),
  idle_sleep_seconds: Schema.NullOr(Schema.Int),
  /** Automatic snapshots (docs/snapshots.md): how many to keep, or null when off. */
  auto_snapshot_keep: Schema.NullOr(Schema.Int),
  setup_script: Schema.NullOr(Schema.String),
  boot_id: Schema.NullOr(Uuid),
  ports: Schema.Array(Schema.Struct({ port: Schema.Int, public: Schema.Boolean, url: Schema.String })),
  last_stop_reason: Schema.NullOr(StopReason),
  source: Schema.Struct({
    kind: Schema.Literal("empty", "fork", "snapshot", "template"),
    id: Schema.NullOr(Schema.String)
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
  started_at: NullableTimestamp,
  stopped_at: NullableTimestamp
}).annotations({ identifier: "Machine" })
export type MachineDto = typeof MachineDto.Type

const MachineName = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9-]{1,63}$/, { message: () => "1-63 characters of a-z, 0-9 and -" })
)
const Seconds = Schema.NullOr(Schema.Int.pipe(Schema.between(1, 30 * 24 * 3600)))

export const CreateMachineRequest = RequestBody({
  name: MachineName,
  size: Schema.optionalWith(Size, { default: () => "default" as const }),
  image: Schema.optionalWith(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)), {
    default: () => "default"
  }),
  environment_id: Schema.optionalWith(Schema.NullOr(Uuid), { default: () => null }),
  internet_access: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  auto_stop_seconds: Schema.optionalWith(Seconds, { default: () => null }),
  idle_sleep_seconds: Schema.optionalWith(Seconds, { default: () => null }),
  setup_script: Schema.optionalWith(Schema.NullOr(Schema.String.pipe(Schema.maxLength(256 * 1024))), {
    default: () => null
  }),
  template: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  start: Schema.optionalWith(Schema.Boolean, { default: () => true })
})
export type CreateMachineRequest = typeof CreateMachineRequest.Type

/** A fork: a new machine whose disk is a copy of the source's (stopped or running). */
export const ForkRequest = RequestBody({
  name: MachineName,
  start: Schema.optionalWith(Schema.Boolean, { default: () => true })
})

/** A restore: a new machine from a snapshot of the machine, its latest ready one when none is named. */
export const RestoreRequest = RequestBody({
  name: MachineName,
  snapshot_id: Schema.optionalWith(Schema.NullOr(Uuid), { default: () => null }),
  start: Schema.optionalWith(Schema.Boolean, { default: () => true })
})

export const PatchMachineRequest = RequestBody({
  name: Schema.optional(MachineName),
  auto_stop_seconds: Schema.optional(Seconds),
  idle_sleep_seconds: Schema.optional(Seconds),
  auto_snapshot_keep: Schema.optional(Schema.NullOr(Schema.Int.pipe(Schema.between(1, 100))))
})

/** OpenSSH public key line: type, base64 key, optional comment. */
const PublicKey = Schema.String.pipe(
  Schema.maxLength(16 * 1024),
  Schema.pattern(
    /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,3}( [^\r\n]*)?$/,
    { message: () => "an OpenSSH public key line such as \"ssh-ed25519 AAAA... comment\"" }
  )
)

export const SshKeyRequest = RequestBody({ public_key: PublicKey })
export const InternetRequest = RequestBody({ enabled: Schema.Boolean })

const PortNumber = Schema.Int.pipe(Schema.between(1, 65535))

export const ExposePortRequest = RequestBody({
  port: PortNumber,
  public: Schema.optionalWith(Schema.Boolean, { default: () => false })
})

export const PortTokenRequest = RequestBody({ expires_in_seconds: Schema.Int.pipe(Schema.between(60, 86400)) })

export const PortToken = Schema.Struct({
  token: Schema.String,
  url: Schema.String,
  expires_at: Timestamp
}).annotations({ identifier: "PortToken" })

export const StopRequest = RequestBody({ force: Schema.optionalWith(Schema.Boolean, { default: () => false }) })

const Base64 = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9+/]*={0,2}$/, { message: () => "must be base64" })
)

export const ExecRequest = RequestBody({
  command: Schema.optional(Schema.NonEmptyArray(Schema.String)),
  shell: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  cwd: Schema.optional(Schema.String),
  env: Schema.optional(
    Schema.Record({ key: Schema.String.pipe(Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]*$/)), value: Schema.String })
  ),
  stdin_base64: Schema.optional(Base64),
  timeout_seconds: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 3600)), { default: () => 300 })
}).pipe(
  Schema.filter((body) =>
    (body.command === undefined) !== (body.shell === undefined) ||
    { path: ["command"], message: "give exactly one of command (argv) or shell" }
  )
)
export type ExecRequest = typeof ExecRequest.Type

const AbsolutePath = Schema.String.pipe(Schema.pattern(/^\//, { message: () => "must be an absolute path" }))
const sixteenMiB = 16 * 1024 * 1024

export const WriteFileRequest = RequestBody({
  path: AbsolutePath,
  data_base64: Base64.pipe(Schema.maxLength(Math.ceil(sixteenMiB / 3) * 4, {
    message: () => "at most 16 MiB of data"
  })),
  mode: Schema.optional(
    Schema.String.pipe(Schema.pattern(/^0?[0-7]{3}$/, { message: () => "an octal mode like 644" }))
  ),
  append: Schema.optionalWith(Schema.Boolean, { default: () => false })
})
export type WriteFileRequest = typeof WriteFileRequest.Type

export const ReadFileRequest = RequestBody({
  ranges: Schema.Array(Schema.Struct({
    path: AbsolutePath,
    offset: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { default: () => 0 }),
    size: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, sixteenMiB)), { default: () => sixteenMiB })
  })).pipe(Schema.minItems(1), Schema.maxItems(16))
})
export type ReadFileRequest = typeof ReadFileRequest.Type

export const MachineList = Schema.Struct({ items: Schema.Array(MachineDto), next_cursor: Schema.NullOr(Schema.String) })

export const ListMachinesParams = QueryParams({ ...pageFields(Schema.String), state: Schema.optional(MachineState) })

const MachinePath = Schema.Struct({ id: Uuid })
const PortPath = Schema.Struct({ id: Uuid, port: Schema.NumberFromString.pipe(Schema.compose(PortNumber)) })

/** An operation-accepting route on one machine: path id, idempotency key, 202, the 409s. */
const change = <
  const Name extends string,
  const Path extends `/v1/machines/:id${string}`,
  const Extra extends ReadonlyArray<ProblemClass<any>> = readonly []
>(
  name: Name,
  method: "post" | "put" | "del",
  path: Path,
  spec: { readonly policy: PolicySpec; readonly errors?: Extra }
) =>
  Endpoint[method](name, path, {
    policy: spec.policy,
    errors: [...acceptErrors, LimitExceeded, ...stateErrors, ...(spec.errors ?? ([] as unknown as Extra))]
  })
    .setPath(MachinePath)
    .setHeaders(IdempotencyHeaders)
    .addSuccess(AcceptedChange, { status: 202 })

export class MachinesApi extends HttpApiGroup.make("machines")
  .add(
    Endpoint.post("create", "/v1/machines", {
      policy: policy("C", "header"),
      errors: [...acceptErrors, NameTaken, LimitExceeded, SnapshotPending]
    })
      .setPayload(CreateMachineRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(AcceptedChange, { status: 202 })
  )
  .add(
    change("fork", "post", "/v1/machines/:id/fork", { policy: policy("C", "header"), errors: [NameTaken] })
      .setPayload(ForkRequest)
  )
  .add(
    change("restore", "post", "/v1/machines/:id/restore", {
      policy: policy("C", "header"),
      errors: [NameTaken, NoSnapshot, SnapshotPending]
    })
      .setPayload(RestoreRequest)
  )
  .add(
    Endpoint.get("list", "/v1/machines", { policy: policy("R", "header") })
      .setUrlParams(ListMachinesParams)
      .addSuccess(MachineList)
  )
  .add(
    Endpoint.get("get", "/v1/machines/:id", { policy: policy("R", "header"), errors: [ResourceNotFound] })
      .setPath(MachinePath)
      .addSuccess(MachineDto)
  )
  .add(
    Endpoint.patch("update", "/v1/machines/:id", {
      policy: policy("U", "header"),
      errors: [ResourceNotFound, NameTaken, MachineDeleted]
    })
      .setPath(MachinePath)
      .setPayload(PatchMachineRequest)
      .addSuccess(MachineDto)
  )
  .add(change("start", "post", "/v1/machines/:id/start", { policy: policy("U", "header") }))
  .add(change("stop", "post", "/v1/machines/:id/stop", { policy: policy("U", "header") }).setPayload(StopRequest))
  .add(change("restart", "post", "/v1/machines/:id/restart", { policy: policy("U", "header") }))
  .add(change("delete", "del", "/v1/machines/:id", { policy: policy("C", "header") }))
  .add(change("exec", "post", "/v1/machines/:id/exec", { policy: policy("U", "header") }).setPayload(ExecRequest))
  .add(
    change("writeFile", "post", "/v1/machines/:id/files/write", { policy: policy("U", "header") }).setPayload(
      WriteFileRequest
    )
  )
  .add(
    change("readFile", "post", "/v1/machines/:id/files/read", { policy: policy("U", "header") }).setPayload(
      ReadFileRequest
    )
  )
  .add(
    change("installSshKey", "post", "/v1/machines/:id/ssh-keys", { policy: policy("U", "header") }).setPayload(
      SshKeyRequest
    )
  )
  .add(
    change("setInternet", "put", "/v1/machines/:id/internet", { policy: policy("U", "header") }).setPayload(
      InternetRequest
    )
  )
  .add(
    change("exposePort", "post", "/v1/machines/:id/ports", { policy: policy("U", "header") }).setPayload(
      ExposePortRequest
    )
  )
  .add(
    change("unexposePort", "del", "/v1/machines/:id/ports/:port", { policy: policy("U", "header") }).setPath(PortPath)
  )
  .add(
    Endpoint.post("createPortToken", "/v1/machines/:id/ports/:port/tokens", {
      policy: policy("U", "header"),
      errors: [ResourceNotFound]
    })
      .setPath(PortPath)
      .setPayload(PortTokenRequest)
      .addSuccess(PortToken, { status: 201 })
  )
  .middleware(Authorization)
{}
