/** `svc ops get|wait|events|list|cancel`: an operation's status and result, waiting, its event stream. */
import { Args, Command, Options } from "@effect/cli"
import { Effect, Stream } from "effect"
import type { OperationDto } from "../operations/Api.js"
import { connect, routePath } from "./Connect.js"
import { follow, writeOutput } from "./EventStream.js"
import { allPages, machineArg, withMachine } from "./Machines.js"
import { bytes, type Column, json, printJson, printList, printRecord, stdout, time } from "./Output.js"
import { waitWithProgress } from "./Progress.js"

const operationArg = Args.text({ name: "operation" }).pipe(Args.withDescription("An operation id"))

const columns: ReadonlyArray<Column<OperationDto>> = [
  { header: "id", value: (o) => o.id },
  { header: "kind", value: (o) => o.kind },
  { header: "status", value: (o) => o.status },
  { header: "error", value: (o) => o.error_code },
  { header: "created", value: (o) => time(o.created_at) },
  { header: "finished", value: (o) => time(o.finished_at) }
]

const details: ReadonlyArray<Column<OperationDto>> = [
  ...columns,
  { header: "machine", value: (o) => o.machine_id },
  { header: "attempts", value: (o) => o.attempt_count },
  { header: "unchanged", value: (o) => o.completed_but_unchanged },
  { header: "stop reason", value: (o) => o.stop_reason },
  { header: "exit code", value: (o) => o.exec_result?.exit_code },
  { header: "queued", value: (o) => o.starting_soon === null ? null : `position ${o.starting_soon.position}` }
]

const get = Command.make("get", { operation: operationArg, json }, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    yield* printRecord(flags.json, yield* client.operations.get({ path: { id: flags.operation } }), details)
  })).pipe(Command.withDescription("Show an operation"))

const wait = Command.make("wait", {
  operation: operationArg,
  timeout: Options.integer("timeout").pipe(
    Options.withDefault(600),
    Options.withDescription("Seconds to wait at most (the operation goes on after)")
  ),
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    const done = yield* waitWithProgress(client, flags.operation, { timeout: `${flags.timeout} seconds` })
    yield* flags.json ? printJson(done) : stdout(`${done.kind} ${done.id}: ${done.status}\n`)
  })).pipe(
    Command.withDescription("Wait until an operation has finished, showing its progress; exit 1 unless it succeeded")
  )

const list = Command.make("list", { machine: machineArg, json }, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    const operations = yield* allPages((cursor) =>
      client.operations.listForMachine({
        path: { id },
        urlParams: { limit: "100", ...(cursor === undefined ? {} : { cursor }) }
      })
    )
    yield* printList(flags.json, operations, columns)
  })).pipe(Command.withDescription("List a machine's operations, newest first"))

const cancel = Command.make("cancel", { operation: operationArg, json }, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    yield* printRecord(flags.json, yield* client.operations.cancel({ path: { id: flags.operation } }), details)
  })).pipe(Command.withDescription("Cancel an operation that has not finished"))

/** An event's data as people read it: an exec's output as its text, the rest as `name: data`. */
const render = (event: string, data: string) => {
  if (event === "output") return writeOutput(data)
  if (event === "status") {
    const status = JSON.parse(data) as { status: string; attempt_count: number; error_code: string | null }
    return stdout(
      `status ${status.status} (attempt ${status.attempt_count})${
        status.error_code === null ? "" : ` ${status.error_code}`
      }\n`
    )
  }
  if (event === "progress") {
    const progress = JSON.parse(data) as { done_bytes: number; total_bytes: number }
    return stdout(`progress ${bytes(progress.done_bytes)} of ${bytes(progress.total_bytes)}\n`)
  }
  return stdout(`${event} ${data}\n`)
}

const parsed = (data: string): unknown => {
  try {
    return JSON.parse(data)
  } catch {
    return data
  }
}

const events = Command.make("events", { operation: operationArg, json }, (flags) =>
  Effect.gen(function*() {
    const connection = yield* connect
    yield* follow(connection, routePath("operations", "events", { id: flags.operation })).pipe(
      Stream.takeUntil((event) => event.event === "end"),
      Stream.runForEach((event) =>
        flags.json
          ? stdout(JSON.stringify({ id: event.id ?? null, event: event.event, data: parsed(event.data) }) + "\n")
          : render(event.event, event.data)
      )
    )
  })).pipe(
    Command.withDescription(
      "Follow an operation's events until it has finished (--json: one JSON object a line: id, event, data)"
    )
  )

export const ops = Command.make("ops").pipe(
  Command.withDescription("Operations: every change to a machine is one"),
  Command.withSubcommands([get, wait, events, list, cancel])
)
