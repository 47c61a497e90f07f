/** `svc alerts list|enable|disable`: which alert e-mails you get in this organization. */
import { Args, Command } from "@effect/cli"
import { Effect } from "effect"
import { alertTypes } from "../alerts/Types.js"
import { connect } from "./Connect.js"
import { json, printList } from "./Output.js"

const typesArg = Args.choice(alertTypes.map((t) => [t, t] as const), { name: "type" }).pipe(
  Args.atLeast(1),
  Args.withDescription(`An alert type: ${alertTypes.join(", ")}`)
)

const list = Command.make("list", { json }, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    const preferences = yield* client.alerts.preferences()
    yield* printList(flags.json, preferences.alerts, [
      { header: "type", value: (a) => a.type },
      { header: "enabled", value: (a) => a.enabled },
      { header: "available", value: (a) => a.available },
      { header: "description", value: (a) => a.description }
    ])
  })).pipe(Command.withDescription("List the alert types, whether you get them and whether this server sends them"))

const toggle = (name: "enable" | "disable", description: string) =>
  Command.make(name, { types: typesArg, json }, (flags) =>
    Effect.gen(function*() {
      const { client } = yield* connect
      const changed = yield* client.alerts.updatePreferences({
        payload: { alerts: Object.fromEntries(flags.types.map((t) => [t, name === "enable"])) }
      })
      yield* printList(flags.json, changed.alerts.filter((a) => flags.types.includes(a.type)), [
        { header: "type", value: (a) => a.type },
        { header: "enabled", value: (a) => a.enabled }
      ])
    })).pipe(Command.withDescription(description))

export const alerts = Command.make("alerts").pipe(
  Command.withDescription("Your alert e-mails in this organization"),
  Command.withSubcommands([
    list,
    toggle("enable", "Get these alerts by e-mail"),
    toggle("disable", "Stop getting these alerts")
  ])
)
