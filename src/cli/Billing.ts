/**
 * `svc usage` (running time and its price, per machine) and `svc billing show|ledger`. Amounts are
 * the API's micro-dollars shown as dollars; `--json` gives the API's numbers unchanged.
 */
import { Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { connect } from "./Connect.js"
import { resolveMachine } from "./Machines.js"
import { allPages } from "./Machines.js"
import { json, printJson, printList, printRecord, stdout, time } from "./Output.js"

/** Micro-dollars as dollars: `1234567` is `$1.23`. */
export const dollars = (micros: number) => `$${(micros / 1_000_000).toFixed(2)}`

const duration = (seconds: number) => {
  const hours = Math.floor(seconds / 3600)
  const minutes = Math.floor((seconds % 3600) / 60)
  return hours > 0
    ? `${hours}h${String(minutes).padStart(2, "0")}m`
    : `${minutes}m${String(seconds % 60).padStart(2, "0")}s`
}

const since = Options.text("since").pipe(
  Options.optional,
  Options.withDescription("Start, an RFC 3339 time such as 2026-11-01T00:00:00Z (default: the period's start)")
)
const until = Options.text("until").pipe(
  Options.optional,
  Options.withDescription("End (exclusive), an RFC 3339 time (default: now)")
)

const usage = Command.make("usage", {
  since,
  until,
  machine: Options.text("machine").pipe(Options.optional, Options.withDescription("Only this machine (name or id)")),
  json
}, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    const urlParams = {
      ...Option.match(flags.since, { onNone: () => ({}), onSome: (value) => ({ since: value }) }),
      ...Option.match(flags.until, { onNone: () => ({}), onSome: (value) => ({ until: value }) })
    }
    if (Option.isSome(flags.machine)) {
      const id = yield* resolveMachine(client, flags.machine.value)
      const one = yield* client.billing.machineUsage({ path: { machine_id: id }, urlParams })
      return yield* printRecord(flags.json, one, [
        { header: "machine", value: (u) => u.machine_id },
        { header: "since", value: (u) => time(u.since) },
        { header: "until", value: (u) => time(u.until) },
        { header: "size", value: (u) => u.size },
        { header: "running", value: (u) => duration(u.seconds) },
        { header: "amount", value: (u) => dollars(u.amount_micros) }
      ])
    }
    const all = yield* client.billing.usage({ urlParams })
    if (flags.json) return yield* printJson(all)
    yield* stdout(
      `${time(all.since)} to ${time(all.until)}: ${duration(all.seconds)} running, ${dollars(all.amount_micros)}\n`
    )
    if (all.machines.length > 0) {
      yield* printList(false, all.machines, [
        { header: "machine", value: (m) => m.name ?? m.machine_id },
        { header: "size", value: (m) => m.size },
        { header: "running", value: (m) => duration(m.seconds) },
        { header: "amount", value: (m) => dollars(m.amount_micros) }
      ])
    }
  })).pipe(Command.withDescription("Show running time and its price, per machine, for a period"))

const show = Command.make("show", { json }, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    yield* printRecord(flags.json, yield* client.billing.get(), [
      { header: "status", value: (b) => b.status },
      { header: "spendable", value: (b) => dollars(b.balances.spendable_micros) },
      { header: "credit", value: (b) => dollars(b.balances.credit_micros) },
      { header: "plan balance", value: (b) => dollars(b.balances.plan_micros) },
      { header: "trial balance", value: (b) => dollars(b.balances.trial_micros) },
      { header: "plan", value: (b) => b.plan.tier },
      { header: "plan renews", value: (b) => b.plan.active ? time(b.plan.period_end) : null },
      { header: "spent this month", value: (b) => dollars(b.credit_spent_this_month_micros) },
      { header: "spend cap", value: (b) => b.spend_cap_micros === null ? null : dollars(b.spend_cap_micros) },
      { header: "minimum balance", value: (b) => dollars(b.minimum_balance_micros) }
    ])
  })).pipe(Command.withDescription("Show the organization's balances, plan and limits"))

const ledger = Command.make("ledger", { json }, (flags) =>
  Effect.gen(function*() {
    const { client } = yield* connect
    const rows = yield* allPages((cursor) =>
      client.billing.ledger({ urlParams: { limit: 100, ...(cursor === undefined ? {} : { cursor }) } })
    )
    yield* printList(flags.json, rows, [
      { header: "time", value: (r) => time(r.created_at) },
      { header: "balance", value: (r) => r.balance },
      { header: "amount", value: (r) => dollars(r.amount_micros) },
      { header: "after", value: (r) => dollars(r.balance_after_micros) },
      { header: "description", value: (r) => r.description }
    ])
  })).pipe(Command.withDescription("List the wallet's movements, newest first"))

export const billing = Command.make("billing").pipe(
  Command.withDescription("Billing: balances, plan and the wallet's movements (payments are in the console)"),
  Command.withSubcommands([show, ledger])
)

export { usage }
