/** `svc machines ...`: list, create, get, start, stop, restart, delete, exec, fork. */
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import type { Client } from "../client/Client.js"
import type { MachineDto } from "../machines/Api.js"
import { connect } from "./Connect.js"
import { resolveEnvironment } from "./Environments.js"
import { streamOutput } from "./EventStream.js"
import { CommandFailed, UsageError } from "./Failure.js"
import { statsCommand } from "./MachineStats.js"
import { type Column, json, printJson, printList, printRecord, stderr, time, wait } from "./Output.js"
import { reportAccepted, waitWithProgress } from "./Progress.js"

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const machineArg = Args.text({ name: "machine" }).pipe(Args.withDescription("A machine's name or id"))

/** Every page of a listing that pages with `next_cursor`. */
export const allPages = <A, E>(
  page: (
    cursor: string | undefined
  ) => Effect.Effect<{ readonly items: ReadonlyArray<A>; readonly next_cursor: string | null }, E>
) =>
  Effect.gen(function*() {
    const items: Array<A> = []
    let cursor: string | undefined = undefined
    do {
      const current: { readonly items: ReadonlyArray<A>; readonly next_cursor: string | null } = yield* page(cursor)
      items.push(...current.items)
      cursor = current.next_cursor ?? undefined
    } while (cursor !== undefined)
    return items
  })

const listMachines = (client: Client, state?: MachineDto["state"]) =>
  allPages((cursor) =>
    client.machines.list({
      urlParams: {
        limit: "100",
        ...(cursor === undefined ? {} : { cursor }),
        ...(state === undefined ? {} : { state })
      }
    })
  )

/** A machine named by id, or by its name among the live machines (names are unique among them). */
export const resolveMachine = (client: Client, ref: string) =>
  uuid.test(ref)
    ? Effect.succeed(ref)
    : Effect.flatMap(listMachines(client), (machines) => {
      const found = machines.find((m) => m.name === ref)
      return found === undefined
        ? Effect.fail(new CommandFailed({ message: `no machine named ${JSON.stringify(ref)}` }))
        : Effect.succeed(found.id)
    })

/** The signed-in client and the machine the command names. */
export const withMachine = (ref: string) =>
  Effect.flatMap(
    connect,
    (connection) => Effect.map(resolveMachine(connection.client, ref), (id) => ({ ...connection, id }))
  )

const columns: ReadonlyArray<Column<MachineDto>> = [
  { header: "name", value: (m) => m.name },
  { header: "id", value: (m) => m.id },
  { header: "state", value: (m) => m.state },
  { header: "size", value: (m) => m.size },
  { header: "image", value: (m) => m.image },
  { header: "created", value: (m) => time(m.created_at) }
]

const details: ReadonlyArray<Column<MachineDto>> = [
  ...columns,
  { header: "internet", value: (m) => m.internet_access },
  { header: "environment", value: (m) => m.environment_id },
  { header: "auto stop", value: (m) => m.auto_stop_seconds === null ? null : `${m.auto_stop_seconds}s` },
  { header: "idle sleep", value: (m) => m.idle_sleep_seconds === null ? null : `${m.idle_sleep_seconds}s` },
  { header: "ports", value: (m) => m.ports.map((p) => `${p.port}${p.public ? " (public)" : ""}`).join(", ") },
  { header: "last stop", value: (m) => m.last_stop_reason },
  { header: "source", value: (m) => m.source.id === null ? m.source.kind : `${m.source.kind} ${m.source.id}` },
  { header: "started", value: (m) => time(m.started_at) },
  { header: "stopped", value: (m) => time(m.stopped_at) }
]

const list = Command.make("list", {
  json,
  state: Options.choice("state", [
    "creating",
    "stopped",
    "starting",
    "running",
    "stopping",
    "deleting",
    "deleted",
    "error"
  ]).pipe(Options.optional, Options.withDescription("Only machines in this state (deleted ones only when asked)"))
}, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    const machines = yield* listMachines(client, Option.getOrUndefined(flags.state) as MachineDto["state"] | undefined)
    yield* printList(flags.json, machines, columns)
  })).pipe(Command.withDescription("List the organization's machines"))

const get = Command.make("get", { machine: machineArg, json }, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    yield* printRecord(flags.json, yield* client.machines.get({ path: { id } }), details)
  })).pipe(Command.withDescription("Show a machine"))

const seconds = (name: string, description: string) =>
  Options.integer(name).pipe(Options.optional, Options.withDescription(description))

const optional = <A>(key: string, value: Option.Option<A>) =>
  Option.match(value, { onNone: () => ({}), onSome: (v) => ({ [key]: v }) })

const create = Command.make("create", {
  name: Args.text({ name: "name" }).pipe(Args.withDescription("1-63 characters of a-z, 0-9 and -")),
  size: Options.choice("size", ["small", "default", "large"]).pipe(
    Options.optional,
    Options.withDescription("How much CPU, memory and disk it gets (default: default)")
  ),
  image: Options.text("image").pipe(
    Options.optional,
    Options.withDescription("The base image to boot (default: default)")
  ),
  environment: Options.text("environment").pipe(
    Options.optional,
    Options.withDescription("An environment's name or id (its variables, such as an agent's key)")
  ),
  template: Options.text("template").pipe(Options.optional, Options.withDescription("A template's name or id")),
  noInternet: Options.boolean("no-internet").pipe(Options.withDescription("Create it without internet access")),
  autoStop: seconds("auto-stop", "Stop it after this many seconds running"),
  idleSleep: seconds("idle-sleep", "Stop it after this many idle seconds"),
  setupScript: Options.text("setup-script").pipe(Options.optional, Options.withDescription("Run once at first boot")),
  stopped: Options.boolean("stopped").pipe(Options.withDescription("Create it without starting it")),
  wait,
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    const environment = Option.isSome(flags.environment)
      ? Option.some(yield* resolveEnvironment(client, flags.environment.value))
      : Option.none()
    const accepted = yield* client.machines.create({
      payload: {
        name: flags.name,
        ...optional("size", flags.size),
        ...optional("image", flags.image),
        ...optional("environment_id", environment),
        ...optional("template", flags.template),
        ...optional("auto_stop_seconds", flags.autoStop),
        ...optional("idle_sleep_seconds", flags.idleSleep),
        ...optional("setup_script", flags.setupScript),
        ...(flags.noInternet ? { internet_access: false } : {}),
        ...(flags.stopped ? { start: false } : {})
      }
    })
    yield* reportAccepted(client, accepted, { ...flags, what: `create ${flags.name} (${accepted.machine_id})` })
  })).pipe(Command.withDescription("Create a machine (started unless --stopped)"))

/** start, restart, delete: a machine and nothing else. */
const simpleChange = (name: "start" | "restart" | "delete", description: string) =>
  Command.make(name, { machine: machineArg, wait, json }, (flags) =>
    Effect.gen(function*() {
      const { client, id } = yield* withMachine(flags.machine)
      const accepted = yield* client.machines[name]({ path: { id } })
      yield* reportAccepted(client, accepted, { ...flags, what: `${name} ${flags.machine}` })
    })).pipe(Command.withDescription(description))

const stop = Command.make("stop", {
  machine: machineArg,
  force: Options.boolean("force").pipe(
    Options.withDescription("Cancel the operations ahead of it that have not finished")
  ),
  wait,
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    const accepted = yield* client.machines.stop({ path: { id }, payload: flags.force ? { force: true } : {} })
    yield* reportAccepted(client, accepted, { ...flags, what: `stop ${flags.machine}` })
  })).pipe(Command.withDescription("Stop a machine"))

const fork = Command.make("fork", {
  machine: machineArg,
  name: Args.text({ name: "new-name" }).pipe(Args.withDescription("The new machine's name")),
  stopped: Options.boolean("stopped").pipe(Options.withDescription("Leave the new machine stopped")),
  wait,
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    const accepted = yield* client.snapshots.fork({
      path: { id },
      payload: { name: flags.name, ...(flags.stopped ? { start: false } : {}) }
    })
    yield* reportAccepted(client, accepted, {
      ...flags,
      what: `fork ${flags.machine} as ${flags.name} (${accepted.machine_id})`
    })
  })).pipe(Command.withDescription("Create a machine whose disk is a copy of this one's"))

const variable = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s

const exec = Command.make("exec", {
  machine: machineArg,
  command: Args.text({ name: "command" }).pipe(Args.repeated, Args.withDescription("The argv to run (after --)")),
  shell: Options.text("shell").pipe(
    Options.optional,
    Options.withDescription("A line for /bin/sh -c instead of an argv")
  ),
  cwd: Options.text("cwd").pipe(
    Options.optional,
    Options.withDescription("The working directory in the machine (default: the home directory)")
  ),
  env: Options.text("env").pipe(Options.repeated, Options.withDescription("NAME=value, repeatable")),
  timeout: Options.integer("timeout").pipe(Options.optional, Options.withDescription("Seconds, 1-3600 (default 300)")),
  stdin: Options.boolean("stdin").pipe(Options.withDescription("Send this command's standard input to it")),
  json
}, (flags) =>
  Effect.gen(function*() {
    const command = Option.match(flags.shell, {
      onNone: () => flags.command.length === 0 ? undefined : { command: flags.command as [string, ...Array<string>] },
      onSome: (shell) => flags.command.length === 0 ? { shell } : undefined
    })
    if (command === undefined) {
      return yield* new UsageError({ message: "give a command after -- or --shell LINE (one of them)" })
    }
    const env: Record<string, string> = {}
    for (const entry of flags.env) {
      const match = variable.exec(entry)
      if (match === null) {
        return yield* new UsageError({ message: `--env ${JSON.stringify(entry)}: expected NAME=value` })
      }
      env[match[1]!] = match[2]!
    }
    const connection = yield* withMachine(flags.machine)
    const { client, id } = connection
    const input = flags.stdin ? yield* readStdin : undefined
    const accepted = yield* client.machines.exec({
      path: { id },
      payload: {
        ...command,
        ...optional("cwd", flags.cwd),
        ...optional("timeout_seconds", flags.timeout),
        ...(flags.env.length > 0 ? { env } : {}),
        ...(input === undefined ? {} : { stdin_base64: input.toString("base64") })
      }
    })
    // For people the output is printed as it comes (the operation's events); for programs, the result.
    if (!flags.json) yield* streamOutput(connection, accepted.operation_id)
    const done = yield* waitWithProgress(client, accepted.operation_id, { quiet: true, hidden: !flags.json })
    const result = done.exec_result!
    if (flags.json) yield* printJson(done)
    else if (result.truncated) yield* stderr("svc: the output was cut at 1 MiB per stream\n")
    // Like ssh and incus exec: the command's own exit code (124 when it ran out of time, like timeout(1)).
    if (result.timed_out) return yield* new CommandFailed({ message: "the command timed out", exitCode: 124 })
    if (result.exit_code !== 0) return yield* new CommandFailed({ message: "", exitCode: result.exit_code })
  })).pipe(Command.withDescription("Run a command in a running machine and print its output; exits with its exit code"))

const readStdin = Effect.promise(async () => {
  const chunks: Array<Buffer> = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
})

export const machines = Command.make("machines").pipe(
  Command.withDescription("Machines: list, create, change and run commands in them"),
  Command.withSubcommands([
    list,
    create,
    get,
    simpleChange("start", "Start a stopped machine"),
    stop,
    simpleChange("restart", "Restart a machine (succeeds once it has booted again)"),
    simpleChange("delete", "Delete a machine and its disk"),
    exec,
    fork,
    statsCommand(machineArg, withMachine)
  ])
)
