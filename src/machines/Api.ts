/** Machines (extensions.md §5): the resource, its settings, and the routes that accept operations. */
import { HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { hostIdPattern } from "../kernel/config/Readers.js"
import { Roles } from "../kernel/domain/Access.js"
import { MachineSize as Size, MachineState, StopReason } from "../kernel/domain/MachineStates.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { moneyErrors } from "../kernel/http/BillingErrors.js"
import {
  AbsoluteMachinePath,
  AcceptedChange,
  IdempotencyHeaders,
  MachineArgument,
  MachinePath,
  MachineString,
  maxArgumentBytes,
  NullableTimestamp,
  QueryParams,
  RequestBody,
  Timestamp,
  Uuid
} from "../kernel/http/Dto.js"
import { Endpoint, type EndpointSpec } from "../kernel/http/Endpoint.js"
import { acceptErrors, stateErrors } from "../kernel/http/ErrorLists.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { LimitExceeded, MachineDeleted, NameTaken } from "../kernel/http/MachineErrors.js"
import { pageFields } from "../kernel/http/Pagination.js"
import { allowedWhileSuspended, policy } from "../kernel/http/Policy.js"
import type { ProblemClass } from "../kernel/http/Problem.js"
import { PortNumber, PortPath } from "../ports/Api.js"
import { SnapshotPending } from "../snapshots/Errors.js"
import { statsEndpoint } from "./StatsApi.js"

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
  stopped_at: NullableTimestamp,
  /** The host that holds the machine's disk (docs/scale-out.md); on one host, that host's id. */
  host_id: Schema.String
}).annotations({ identifier: "Machine" })
export type MachineDto = typeof MachineDto.Type

export const MachineName = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9-]{1,63}$/, { message: () => "1-63 characters of a-z, 0-9 and -" })
)
const HostId = Schema.String.pipe(
  Schema.pattern(hostIdPattern, { message: () => "a host id: 1-63 characters of a-z, 0-9 and -" })
)
const Seconds = Schema.NullOr(Schema.Int.pipe(Schema.between(1, 30 * 24 * 3600)))

export const CreateMachineRequest = RequestBody({
  name: MachineName,
  size: Schema.optionalWith(Size, { default: () => "default" as const }),
  image: Schema.optionalWith(MachineString.pipe(Schema.minLength(1), Schema.maxLength(200)), {
    default: () => "default"
  }),
  environment_id: Schema.optionalWith(Schema.NullOr(Uuid), { default: () => null }),
  internet_access: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  auto_stop_seconds: Schema.optionalWith(Seconds, { default: () => null }),
  idle_sleep_seconds: Schema.optionalWith(Seconds, { default: () => null }),
  /** Run as `sh -c <script>` at the first boot, so one argument's limit. */
  setup_script: Schema.optionalWith(Schema.NullOr(MachineArgument), { default: () => null }),
  template: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  start: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  /** The host for the machine (docs/scale-out.md "Placement"); absent or null: svc places it. */
  host: Schema.optional(Schema.NullOr(HostId))
})
export type CreateMachineRequest = typeof CreateMachineRequest.Type

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
    /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,3}( [^\r\n\0]*)?$/,
    { message: () => "an OpenSSH public key line such as \"ssh-ed25519 AAAA... comment\"" }
  )
)

export const SshKeyRequest = RequestBody({ public_key: PublicKey })
export const InternetRequest = RequestBody({ enabled: Schema.Boolean })

export const ExposePortRequest = RequestBody({
  port: PortNumber,
  public: Schema.optionalWith(Schema.Boolean, { default: () => false })
})

export const StopRequest = RequestBody({ force: Schema.optionalWith(Schema.Boolean, { default: () => false }) })

const Base64 = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9+/]*={0,2}$/, { message: () => "must be base64" })
)

/** What one exec may hand the kernel: its arguments and variables, well under Linux's ARG_MAX. */
const maxCommandBytes = 1024 * 1024

const entryBytes = (name: string, value: string) => Buffer.byteLength(name) + 1 + Buffer.byteLength(value)

/** The bytes an exec's arguments and variables take in the new process, each with its final NUL. */
const commandBytes = (body: {
  readonly command?: ReadonlyArray<string> | undefined
  readonly shell?: string | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
}) =>
  (body.command ?? [body.shell ?? ""]).reduce((sum, arg) => sum + Buffer.byteLength(arg) + 1, 0) +
  Object.entries(body.env ?? {}).reduce((sum, [name, value]) => sum + entryBytes(name, value) + 1, 0)

const VariableEntries = Schema.Record({
  key: Schema.String.pipe(
    Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: () => "a variable name like API_TOKEN" })
  ),
  value: MachineString
}).pipe(
  Schema.filter((env) => {
    const long = Object.entries(env).find(([name, value]) => entryBytes(name, value) > maxArgumentBytes)
    return long === undefined ||
      { path: [long[0]], message: `NAME=value at most ${maxArgumentBytes} bytes (the kernel's limit for one entry)` }
  })
)

export const ExecRequest = RequestBody({
  command: Schema.optional(Schema.NonEmptyArray(MachineArgument)),
  shell: Schema.optional(
    MachineArgument.pipe(Schema.minLength(1)).annotations({
      description: "a line for /bin/sh -c: no NUL byte, at most 131071 bytes"
    })
  ),
  cwd: Schema.optional(MachinePath),
  env: Schema.optional(VariableEntries),
  stdin_base64: Schema.optional(Base64),
  timeout_seconds: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 3600)), { default: () => 300 })
}, { allOf: [{ oneOf: [{ required: ["command"] }, { required: ["shell"] }] }] }).pipe(
  Schema.filter((body) =>
    (body.command === undefined) !== (body.shell === undefined) ||
    { path: ["command"], message: "give exactly one of command (argv) or shell" }
  ),
  Schema.filter((body) =>
    commandBytes(body) <= maxCommandBytes ||
    { path: ["command"], message: `the command and env together at most ${maxCommandBytes} bytes` }
  )
)
export type ExecRequest = typeof ExecRequest.Type

const sixteenMiB = 16 * 1024 * 1024

export const WriteFileRequest = RequestBody({
  path: AbsoluteMachinePath,
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
    path: AbsoluteMachinePath,
    offset: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { default: () => 0 }),
    size: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, sixteenMiB)), { default: () => sixteenMiB })
  })).pipe(Schema.minItems(1), Schema.maxItems(16))
})
export type ReadFileRequest = typeof ReadFileRequest.Type

export const MachineList = Schema.Struct({ items: Schema.Array(MachineDto), next_cursor: Schema.NullOr(Schema.String) })

export const ListMachinesParams = QueryParams({ ...pageFields(Schema.String), state: Schema.optional(MachineState) })

const MachineIdPath = Schema.Struct({ id: Uuid })

/** An operation-accepting route on one machine: path id, idempotency key, 202, the 409s. */
export const machineChange = <
  const Name extends string,
  const Path extends `/v1/machines/:id${string}`,
  const Extra extends ReadonlyArray<ProblemClass<any>> = readonly []
>(
  name: Name,
  method: "post" | "put" | "del",
  path: Path,
  spec: EndpointSpec<Extra>
) =>
  Endpoint[method](name, path, {
    ...spec,
    description: `${spec.description}\n\n${accepted}`,
    errors: [
      ...acceptErrors,
      LimitExceeded,
      ...moneyErrors,
      ...stateErrors,
      ...(spec.errors ?? ([] as unknown as Extra))
    ]
  })
    .setPath(MachineIdPath)
    .setHeaders(IdempotencyHeaders)
    .addSuccess(AcceptedChange, { status: 202 })

/** What every operation-accepting route says once. */
const accepted = "An operation ([IDEM]): answers 202 at once with `operation_url`; the machine changes in the " +
  "background, in acceptance order with its other operations. The request is checked against the state the " +
  "machine will have once the operations already accepted have run (409 when it conflicts). The same " +
  "`Idempotency-Key` with the same body answers the first operation again; with another body, 409 " +
  "`idempotency_conflict`."

export class MachinesApi extends HttpApiGroup.make("machines")
  .add(
    Endpoint.post("create", "/v1/machines", {
      summary: "Create a machine",
      description: "Creates a machine, started unless `start` is false. `name` is unique among the organization's " +
        "live machines. `template` (a name or an id) makes it from a template's disk. `host` puts it on that live " +
        "host (422 when no live host has that id); without it svc places it on the live host with the fewest " +
        "running machines that has room. `setup_script` runs once " +
        "as `/bin/sh -c`, at the first boot; its result is on the create operation.\n\n" + accepted,
      policy: policy("C", "header", Roles.machineChangers),
      errors: [...acceptErrors, NameTaken, LimitExceeded, ...moneyErrors, SnapshotPending]
    })
      .setPayload(CreateMachineRequest)
      .setHeaders(IdempotencyHeaders)
      .addSuccess(AcceptedChange, { status: 202 })
  )
  .add(
    Endpoint.get("list", "/v1/machines", {
      summary: "List machines",
      description: "The organization's machines, a page at a time (`next_cursor`). Deleted machines are left out " +
        "unless `state=deleted` is asked for.",
      policy: policy("R", "header", Roles.anyMember)
    })
      .setUrlParams(ListMachinesParams)
      .addSuccess(MachineList)
  )
  .add(
    Endpoint.get("get", "/v1/machines/:id", {
      summary: "Get a machine",
      description: "One machine, deleted ones included (state `deleted`).",
      policy: policy("R", "header", Roles.anyMember),
      errors: [ResourceNotFound]
    })
      .setPath(MachineIdPath)
      .addSuccess(MachineDto)
  )
  .add(statsEndpoint)
  .add(
    Endpoint.patch("update", "/v1/machines/:id", {
      summary: "Change a machine's settings",
      description: "Renames a machine or changes its timers (`auto_stop_seconds`, `idle_sleep_seconds`, null turns " +
        "one off) or its automatic snapshots. Not an operation: answers at once with the machine; absent members " +
        "are left as they are.",
      policy: allowedWhileSuspended(policy("U", "header", Roles.machineChangers)),
      errors: [ResourceNotFound, NameTaken, MachineDeleted]
    })
      .setPath(MachineIdPath)
      .setPayload(PatchMachineRequest)
      .addSuccess(MachineDto)
  )
  .add(machineChange("start", "post", "/v1/machines/:id/start", {
    summary: "Start a machine",
    description: "Boots a stopped machine. Takes no body.",
    policy: policy("U", "header", Roles.machineChangers)
  }))
  .add(
    machineChange("stop", "post", "/v1/machines/:id/stop", {
      summary: "Stop a machine",
      description: "Stops a running machine (`stop_reason` `api`). The body may be left out. With `force`, " +
        "the operations accepted before it that have not finished are cancelled, so a machine stuck behind " +
        "one can always be stopped.",
      policy: allowedWhileSuspended(policy("U", "header", Roles.machineChangers))
    }).setPayload(StopRequest)
  )
  .add(machineChange("restart", "post", "/v1/machines/:id/restart", {
    summary: "Restart a machine",
    description: "Stops and boots the machine; it succeeds once a new boot (`boot_id`) is observed. Takes no body.",
    policy: policy("U", "header", Roles.machineChangers)
  }))
  .add(machineChange("delete", "del", "/v1/machines/:id", {
    summary: "Delete a machine",
    description: "Stops the machine and removes it with its disk; the operations accepted before it that have not " +
      "finished are cancelled. The machine is still found by id, with state `deleted`, and its name is free " +
      "again. Takes no body.",
    policy: allowedWhileSuspended(policy("C", "header", Roles.machineChangers))
  }))
  .add(
    machineChange("exec", "post", "/v1/machines/:id/exec", {
      summary: "Run a command",
      description: "Runs `command` (an argv) or `shell` (a line for `/bin/sh -c`) in the running machine, in `cwd` " +
        "(relative to the machine's home) with `env` added, `stdin_base64` as its input, for at most " +
        "`timeout_seconds`. The result is the operation's `exec_result` (the first 1 MiB of stdout and stderr " +
        "each). Arguments hold no NUL byte; one argument, a shell line or `NAME=value` at most 131071 bytes, " +
        "the command and env together at most 1 MiB; `cwd` at most 4095 bytes.",
      policy: policy("U", "header", Roles.machineChangers)
    }).setPayload(ExecRequest)
  )
  .add(
    machineChange("writeFile", "post", "/v1/machines/:id/files/write", {
      summary: "Write a file",
      description: "Writes (or with `append`, appends) `data_base64`, at most 16 MiB, to the absolute `path` in the " +
        "running machine, with `mode` (octal) when given. A path holds no NUL byte, at most 4095 bytes, each name " +
        "at most 255. The operation fails with `error_code` `write_failed` when the machine cannot write the file; " +
        "after 60 s it is stopped and ends `correlation_miss` with `file_operation_timeout` (part of the file may " +
        "be written).",
      policy: policy("U", "header", Roles.machineChangers)
    }).setPayload(WriteFileRequest)
  )
  .add(
    machineChange("readFile", "post", "/v1/machines/:id/files/read", {
      summary: "Read files",
      description: "Reads 1-16 `ranges` (absolute `path`, `offset`, `size` at most 16 MiB) from the running machine; " +
        "the data is the operation's `file_ranges` (`missing` for a file that does not exist; a directory fails " +
        "the operation with `error_code` `not_a_file`). svc keeps no more than the sizes asked: a machine that " +
        "answers more fails the operation with `read_limit_exceeded`; one that has not answered after 60 s fails " +
        "it with `file_operation_timeout`. Either way the machine's next operation then runs.",
      policy: policy("U", "header", Roles.machineChangers)
    }).setPayload(ReadFileRequest)
  )
  .add(
    machineChange("installSshKey", "post", "/v1/machines/:id/ssh-keys", {
      summary: "Install an SSH key",
      description: "Adds an OpenSSH public key line to the machine's authorized keys.",
      policy: policy("U", "header", Roles.machineChangers)
    }).setPayload(SshKeyRequest)
  )
  .add(
    machineChange("setInternet", "put", "/v1/machines/:id/internet", {
      summary: "Turn internet access on or off",
      description: "Changes the running machine's network; it succeeds once the change is observed, without a " +
        "restart.",
      policy: policy("U", "header", Roles.machineChangers)
    }).setPayload(InternetRequest)
  )
  .add(
    machineChange("exposePort", "post", "/v1/machines/:id/ports", {
      summary: "Expose a port",
      description: "Makes a port of the machine reachable through the port proxy at " +
        "`/v1/machines/{id}/ports/{port}/http/`: a public port needs nothing, a private one a key, a session or " +
        "a port token.",
      policy: policy("U", "header", Roles.machineChangers)
    }).setPayload(ExposePortRequest)
  )
  .add(
    machineChange("unexposePort", "del", "/v1/machines/:id/ports/:port", {
      summary: "Stop exposing a port",
      description: "The port proxy stops forwarding to this port. Takes no body.",
      policy: allowedWhileSuspended(policy("U", "header", Roles.machineChangers))
    }).setPath(PortPath)
  )
  .middleware(Authorization)
  .annotate(
    OpenApi.Description,
    "Machines: create, change and delete them; run commands and move files in them; expose their ports. " +
      "Every change is an operation (see operations)."
  )
{}
