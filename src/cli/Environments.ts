/**
 * `svc env ...`: environments, the versioned variables machines get (docs/agents.md gives an agent
 * its provider key this way). Values are write-only: the API never answers them, so neither does
 * the CLI. A value can come from standard input (`svc env set agents ANTHROPIC_API_KEY < key`) so
 * that a secret stays out of the shell's history and the process list.
 */
import { Args, Command } from "@effect/cli"
import { Effect } from "effect"
import type { Client } from "../client/Client.js"
import type { EnvironmentDto } from "../environments/Api.js"
import { connect } from "./Connect.js"
import { CommandFailed, UsageError } from "./Failure.js"
import { type Column, json, printJson, printList, printRecord, stderr, stdout, time, wait } from "./Output.js"
import { waitWithProgress } from "./Progress.js"

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const environmentArg = Args.text({ name: "environment" }).pipe(Args.withDescription("An environment's name or id"))

/** An environment named by id, or by its name. */
export const resolveEnvironment = (client: Client, ref: string) =>
  uuid.test(ref)
    ? Effect.succeed(ref)
    : Effect.flatMap(client.environments.list(), ({ items }) => {
      const found = items.find((e) => e.name === ref)
      return found === undefined
        ? Effect.fail(new CommandFailed({ message: `no environment named ${JSON.stringify(ref)}` }))
        : Effect.succeed(found.id)
    })

const withEnvironment = (ref: string) =>
  Effect.flatMap(
    connect,
    (connection) => Effect.map(resolveEnvironment(connection.client, ref), (id) => ({ ...connection, id }))
  )

type Environment = typeof EnvironmentDto.Type

const columns: ReadonlyArray<Column<Environment>> = [
  { header: "name", value: (e) => e.name },
  { header: "id", value: (e) => e.id },
  { header: "version", value: (e) => e.version },
  { header: "variables", value: (e) => e.variable_names.join(", ") },
  { header: "updated", value: (e) => time(e.updated_at) }
]

const assignment = /^([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?$/s

const readStdin = Effect.promise(async () => {
  const chunks: Array<Buffer> = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8")
})

/**
 * `KEY=VALUE` words into variables; one bare `KEY` takes standard input as its value (one trailing
 * newline removed, as `echo` and editors add it).
 */
export const parseAssignments = (words: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const variables: Record<string, string> = {}
    let fromStdin: string | undefined
    for (const word of words) {
      const match = assignment.exec(word)
      if (match === null) {
        return yield* new UsageError({ message: `${JSON.stringify(word)}: expected NAME=value or NAME` })
      }
      if (match[2] !== undefined) variables[match[1]!] = match[2]
      else if (fromStdin !== undefined) {
        return yield* new UsageError({ message: `only one NAME may take its value from stdin (${fromStdin}, ${word})` })
      } else fromStdin = match[1]!
    }
    if (fromStdin !== undefined) variables[fromStdin] = (yield* readStdin).replace(/\r?\n$/, "")
    return variables
  })

const assignmentsArg = Args.text({ name: "NAME=value" }).pipe(
  Args.repeated,
  Args.withDescription("A variable and its value; a NAME alone reads its value from standard input")
)

const list = Command.make("list", { json }, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    yield* printList(flags.json, (yield* client.environments.list()).items, columns)
  })).pipe(Command.withDescription("List the organization's environments and their variable names"))

const get = Command.make("get", { environment: environmentArg, json }, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withEnvironment(flags.environment)
    yield* printRecord(flags.json, yield* client.environments.get({ path: { id } }), columns)
  })).pipe(Command.withDescription("Show an environment: its version and variable names (values are write-only)"))

const create = Command.make("create", {
  name: Args.text({ name: "name" }).pipe(Args.withDescription("The environment's name, 1-64 characters")),
  variables: assignmentsArg,
  json
}, (flags) =>
  Effect.gen(function*() {
    const variables = yield* parseAssignments(flags.variables)
    const { client } = yield* connect
    const created = yield* client.environments.create({ payload: { name: flags.name, variables } })
    yield* flags.json
      ? printJson(created)
      : stdout(`created environment ${created.name} (${created.id}), version ${created.version}\n`)
  })).pipe(Command.withDescription("Create an environment, with variables if given"))

/** A change of variables (set or unset): the new version, and how machines get it. */
const patchVariables = (
  ref: string,
  variables: Record<string, string | null>,
  asJson: boolean
) =>
  Effect.gen(function*() {
    const { client, id } = yield* withEnvironment(ref)
    const changed = yield* client.environments.update({ path: { id }, payload: { variables } })
    if (asJson) return yield* printJson(changed)
    yield* stdout(`${changed.name}: version ${changed.version} (${Object.keys(variables).join(", ")})\n`)
    yield* stderr(`machines get it from their next start, or now with: svc env upgrade ${changed.name}\n`)
  })

const set = Command.make(
  "set",
  { environment: environmentArg, variables: assignmentsArg, json },
  (flags) =>
    Effect.gen(function*() {
      if (flags.variables.length === 0) return yield* new UsageError({ message: "give at least one NAME=value" })
      yield* patchVariables(flags.environment, yield* parseAssignments(flags.variables), flags.json)
    })
).pipe(Command.withDescription("Set variables (a new version); other variables keep their values"))

const unset = Command.make(
  "unset",
  {
    environment: environmentArg,
    names: Args.text({ name: "NAME" }).pipe(Args.atLeast(1), Args.withDescription("A variable to remove")),
    json
  },
  (flags) => patchVariables(flags.environment, Object.fromEntries(flags.names.map((name) => [name, null])), flags.json)
).pipe(
  Command.withDescription("Remove variables (a new version)")
)

const rename = Command.make("rename", {
  environment: environmentArg,
  name: Args.text({ name: "new-name" }).pipe(Args.withDescription("Its new name, 1-64 characters")),
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withEnvironment(flags.environment)
    const changed = yield* client.environments.update({ path: { id }, payload: { name: flags.name } })
    yield* flags.json ? printJson(changed) : stdout(`renamed to ${changed.name}\n`)
  })).pipe(Command.withDescription("Rename an environment"))

const deleteEnvironment = Command.make(
  "delete",
  { environment: environmentArg, json },
  (flags) =>
    Effect.gen(function*() {
      const { client, id } = yield* withEnvironment(flags.environment)
      yield* client.environments.delete({ path: { id } })
      yield* flags.json ? printJson({ deleted: id }) : stdout(`deleted environment ${flags.environment}\n`)
    })
).pipe(Command.withDescription("Delete an environment no live machine uses"))

const upgrade = Command.make("upgrade", { environment: environmentArg, wait, json }, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withEnvironment(flags.environment)
    const { operations } = yield* client.environments.upgrade({ path: { id } })
    if (flags.wait) {
      const done = yield* Effect.forEach(operations, (op) => waitWithProgress(client, op.operation_id))
      return yield* flags.json ? printJson(done) : stdout(`${done.length} machine(s) on the latest version\n`)
    }
    if (flags.json) return yield* printJson({ operations })
    yield* stdout(
      operations.length === 0
        ? "every machine is on the latest version\n"
        : operations.map((op) => `machine ${op.machine_id}: operation ${op.operation_id}\n`).join("")
    )
  })).pipe(Command.withDescription("Bring the machines that use it to its latest version"))

export const environments = Command.make("env").pipe(
  Command.withDescription("Environments: variables (API keys, tokens) for machines and their agents"),
  Command.withSubcommands([list, get, create, set, unset, rename, deleteEnvironment, upgrade])
)
