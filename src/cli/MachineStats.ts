/**
 * `svc machines stats <machine>`: what the machine uses now against its size's limits. Made with
 * the machines command's argument and resolver (Machines.ts registers it), so no import cycle.
 */
import { type Args, Command } from "@effect/cli"
import { Effect } from "effect"
import type { Client } from "../client/Client.js"
import type { MachineStatsDto } from "../machines/StatsApi.js"
import { bytes, json, printJson, renderTable, stdout, time } from "./Output.js"

interface Row {
  readonly resource: string
  readonly used: string | null
  readonly limit: string
  readonly share: string | null
}

const percent = (used: number | null, limit: number) =>
  used === null || limit <= 0 ? null : `${((used / limit) * 100).toFixed(1)}%`

const rowsOf = (stats: MachineStatsDto): ReadonlyArray<Row> => [
  {
    resource: "cpu",
    used: stats.cpu.used_cpus === null ? null : `${stats.cpu.used_cpus.toFixed(2)} CPUs`,
    limit: `${stats.cpu.limit_cpus} CPUs`,
    share: stats.cpu.percent_of_limit === null ? null : `${stats.cpu.percent_of_limit.toFixed(1)}%`
  },
  {
    resource: "memory",
    used: stats.memory.used_bytes === null ? null : bytes(stats.memory.used_bytes),
    limit: bytes(stats.memory.limit_bytes),
    share: percent(stats.memory.used_bytes, stats.memory.limit_bytes)
  },
  {
    resource: "disk",
    used: stats.disk.used_bytes === null ? null : bytes(stats.disk.used_bytes),
    limit: bytes(stats.disk.size_bytes),
    share: percent(stats.disk.used_bytes, stats.disk.size_bytes)
  },
  {
    resource: "processes",
    used: stats.processes.current === null ? null : String(stats.processes.current),
    limit: String(stats.processes.limit),
    share: percent(stats.processes.current, stats.processes.limit)
  }
]

export const statsCommand = <E, R>(
  machineArg: Args.Args<string>,
  withMachine: (ref: string) => Effect.Effect<{ readonly client: Client; readonly id: string }, E, R>
) =>
  Command.make("stats", { machine: machineArg, json }, (flags) =>
    Effect.gen(function*() {
      const { client, id } = yield* withMachine(flags.machine)
      const answer = yield* client.machines.stats({ path: { id } })
      if (flags.json) return yield* printJson(answer)
      const cpuTotal = `${answer.cpu.seconds_total.toFixed(1)} CPU seconds since created`
      yield* stdout(`${answer.state}, ${answer.size}; read ${time(answer.read_at)} UTC; ${cpuTotal}\n`)
      yield* stdout(renderTable(rowsOf(answer), [
        { header: "resource", value: (r) => r.resource },
        { header: "used", value: (r) => r.used },
        { header: "limit", value: (r) => r.limit },
        { header: "of limit", value: (r) => r.share }
      ]))
    })).pipe(Command.withDescription("Show what a machine uses now (CPU, memory, disk, processes) against its limits"))
