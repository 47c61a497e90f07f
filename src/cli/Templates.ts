/** `svc templates list|create|get|delete`: stopped machines saved under a name. */
import { Args, Command } from "@effect/cli"
import { Effect } from "effect"
import { connect } from "./Connect.js"
import { allPages, machineArg, withMachine } from "./Machines.js"
import { json, printJson, printList, printRecord, stdout, wait } from "./Output.js"
import { reportAccepted } from "./Progress.js"
import { page, snapshotDetails, templateColumns } from "./Snapshots.js"

const templateArg = Args.text({ name: "template" }).pipe(Args.withDescription("A template's name or id"))

const templateList = Command.make("list", { json }, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    const items = yield* allPages((cursor) => client.snapshots.listTemplates({ urlParams: page(cursor) }))
    yield* printList(flags.json, items, templateColumns)
  })).pipe(Command.withDescription("List the organization's templates"))

const templateCreate = Command.make("create", {
  machine: machineArg,
  name: Args.text({ name: "name" }).pipe(Args.withDescription("The template's name")),
  wait,
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client, id } = yield* withMachine(flags.machine)
    const accepted = yield* client.snapshots.createTemplate({ payload: { machine_id: id, name: flags.name } })
    yield* reportAccepted(client, accepted, { ...flags, what: `template ${flags.name} from ${flags.machine}` })
  })).pipe(Command.withDescription("Save a stopped machine as a template"))

const templateGet = Command.make("get", { template: templateArg, json }, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    yield* printRecord(
      flags.json,
      yield* client.snapshots.getTemplate({ path: { template: flags.template } }),
      snapshotDetails
    )
  })).pipe(Command.withDescription("Show a template"))

const templateDelete = Command.make("delete", { template: templateArg, json }, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    yield* client.snapshots.deleteTemplate({ path: { template: flags.template } })
    yield* flags.json ? printJson({ deleted: flags.template }) : stdout(`deleted ${flags.template}\n`)
  })).pipe(Command.withDescription("Delete a template; its name is free again"))

export const templates = Command.make("templates").pipe(
  Command.withDescription("Templates: stopped machines saved under a name, to create machines from"),
  Command.withSubcommands([templateList, templateCreate, templateGet, templateDelete])
)
