/** `svc snapshots list|push|latest|get|delete|prune|restore`: the snapshots routes, and restore (a machine route). */
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import type { SnapshotDto } from "../snapshots/Api.js"
import { connect } from "./Connect.js"
import { allPages, machineArg, withMachine } from "./Machines.js"
import { bytes, type Column, json, printJson, printList, printRecord, stdout, time, wait } from "./Output.js"
import { reportAccepted } from "./Progress.js"

const snapshotArg = Args.text({ name: "snapshot" }).pipe(Args.withDescription("A snapshot id"))

const columns: ReadonlyArray<Column<SnapshotDto>> = [
  { header: "id", value: (s) => s.id },
  { header: "status", value: (s) => s.status },
  { header: "source", value: (s) => s.source },
  { header: "tier", value: (s) => s.tier },
  { header: "size", value: (s) => bytes(s.size_bytes) },
  { header: "created", value: (s) => time(s.created_at) }
]
export const templateColumns: ReadonlyArray<Column<SnapshotDto>> = [
  { header: "name", value: (s) => s.name },
  ...columns
]
export const snapshotDetails: ReadonlyArray<Column<SnapshotDto>> = [
  ...templateColumns,
  { header: "machine", value: (s) => s.machine_id },
  { header: "operation", value: (s) => s.operation_id },
  { header: "error", value: (s) => s.error_code },
  { header: "completed", value: (s) => time(s.completed_at) }
]

export const page = (cursor: string | undefined) => ({ limit: "100", ...(cursor === undefined ? {} : { cursor }) })

const list = Command.make("list", { machine: machineArg, json }, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    const items = yield* allPages((cursor) => client.snapshots.list({ path: { id }, urlParams: page(cursor) }))
    yield* printList(flags.json, items, columns)
  })).pipe(Command.withDescription("List a machine's snapshots"))

const push = Command.make("push", {
  machine: machineArg,
  tier: Options.choice("tier", ["warm", "cold"]).pipe(
    Options.optional,
    Options.withDescription("warm (default) is fastest to restore; cold is compressed, smaller")
  ),
  wait,
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    const accepted = yield* client.snapshots.push({
      path: { id },
      payload: Option.match(flags.tier, { onNone: () => ({}), onSome: (tier) => ({ tier }) })
    })
    yield* reportAccepted(client, accepted, { ...flags, what: `snapshot ${accepted.snapshot_id} of ${flags.machine}` })
  })).pipe(Command.withDescription("Snapshot a stopped machine"))

const latest = Command.make("latest", { machine: machineArg, json }, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    const snapshot = yield* client.snapshots.latest({ path: { id } })
    yield* printRecord(flags.json, snapshot, [
      { header: "id", value: (s) => s.id },
      { header: "source", value: (s) => s.source },
      { header: "tier", value: (s) => s.tier },
      { header: "size", value: (s) => bytes(s.size_bytes) },
      { header: "completed", value: (s) => time(s.completed_at) }
    ])
  })).pipe(Command.withDescription("Show a machine's newest ready snapshot"))

const get = Command.make("get", { snapshot: snapshotArg, json }, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    yield* printRecord(
      flags.json,
      yield* client.snapshots.get({ path: { snapshot_id: flags.snapshot } }),
      snapshotDetails
    )
  })).pipe(Command.withDescription("Show a snapshot"))

const deleteOne = Command.make(
  "delete",
  { snapshots: snapshotArg.pipe(Args.atLeast(1)), json },
  (flags) =>
    Effect.gen(function*() {
      const { client } = yield* connect
      if (flags.snapshots.length === 1) {
        yield* client.snapshots.delete({ path: { snapshot_id: flags.snapshots[0]! } })
        return yield* flags.json ? printJson({ deleted: 1 }) : stdout(`deleted ${flags.snapshots[0]}\n`)
      }
      const results = yield* client.snapshots.bulkDelete({ payload: { snapshot_ids: flags.snapshots } })
      yield* flags.json ? printJson(results) : printList(false, results.results, resultColumns)
    })
).pipe(Command.withDescription("Delete snapshots (several at once: each id's result is listed)"))

const resultColumns: ReadonlyArray<Column<{ readonly snapshot_id: string; readonly result: string }>> = [
  { header: "snapshot", value: (r) => r.snapshot_id },
  { header: "result", value: (r) => r.result }
]

const prune = Command.make("prune", {
  machine: machineArg,
  source: Options.choice("source", ["api", "automatic"]).pipe(
    Options.optional,
    Options.withDescription("Only this source's snapshots (default all; templates and pending pushes are kept)")
  ),
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    const results = yield* client.snapshots.deleteForMachine({
      path: { id },
      urlParams: Option.match(flags.source, { onNone: () => ({}), onSome: (source) => ({ source }) })
    })
    yield* flags.json ? printJson(results) : printList(false, results.results, resultColumns)
  })).pipe(Command.withDescription("Delete a machine's snapshots"))

const restore = Command.make("restore", {
  machine: machineArg,
  name: Args.text({ name: "new-name" }).pipe(Args.withDescription("The new machine's name")),
  snapshot: Options.text("snapshot").pipe(Options.optional, Options.withDescription("Default: the latest ready one")),
  stopped: Options.boolean("stopped").pipe(Options.withDescription("Leave the new machine stopped")),
  wait,
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    const accepted = yield* client.snapshots.restore({
      path: { id },
      payload: {
        name: flags.name,
        ...Option.match(flags.snapshot, { onNone: () => ({}), onSome: (snapshot_id) => ({ snapshot_id }) }),
        ...(flags.stopped ? { start: false } : {})
      }
    })
    yield* reportAccepted(client, accepted, { ...flags, what: `restore as ${flags.name} (${accepted.machine_id})` })
  })).pipe(Command.withDescription("Restore a snapshot of the machine as a new machine"))

export const snapshots = Command.make("snapshots").pipe(
  Command.withDescription("Snapshots of stopped machines"),
  Command.withSubcommands([list, push, latest, get, deleteOne, prune, restore])
)
