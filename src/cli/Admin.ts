import { Command, Options } from "@effect/cli"
import { Console, Effect, Layer, Option, Schema } from "effect"
import { IdentityLive } from "../App.js"
import { Accounts } from "../identity/Accounts.js"
import { EmailAddress } from "../identity/Api.js"
import { AuditLog, type AuditRow } from "../kernel/AuditLog.js"
import * as AppConfig from "../kernel/config/AppConfig.js"
import { hostDto, listHosts } from "../operator/Hosts.js"
import { backupCommands } from "./Backup.js"
import { withDataDir } from "./DataDirOption.js"
import { installSystemd } from "./Systemd.js"

/**
 * `svc admin bootstrap`: works with or without a running server (SQLite's busy timeout lets both
 * write), and prints exactly one JSON line on stdout.
 */
const bootstrap = Command.make(
  "bootstrap",
  {
    email: Options.text("email").pipe(Options.withDescription("The owner's e-mail address")),
    org: Options.text("org").pipe(Options.optional, Options.withDescription("The organization's name")),
    dataDir: Options.text("data-dir").pipe(
      Options.optional,
      Options.withDescription("The data directory (default SVC_DATA_DIR)")
    )
  },
  ({ dataDir, email, org }) => {
    // The same rule as sign-in's; a usage error is one line on stderr and exit code 2 (nothing is opened).
    if (!Schema.is(EmailAddress)(email.trim())) {
      return Effect.sync(() => {
        process.stderr.write(`svc: --email: ${JSON.stringify(email)} is not an email address\n`)
        process.exit(2)
      })
    }
    return Effect.gen(function*() {
      const accounts = yield* Accounts
      const result = yield* accounts.bootstrap(email, Option.getOrUndefined(org))
      yield* Console.log(JSON.stringify(result))
    }).pipe(
      Effect.provide(IdentityLive.pipe(Layer.provide(AppConfig.layer))),
      withDataDir(dataDir)
    )
  }
).pipe(Command.withDescription("Create (or find) a user and their organization and mint a full_access API key"))

/** One audit row as a line: time, who, what, where, why (and the detail when there is one). */
const auditLine = (row: AuditRow) =>
  [
    new Date(row.at).toISOString(),
    `${row.actor_kind}:${row.actor}`,
    row.action,
    row.organization_id ?? "-",
    JSON.stringify(row.reason ?? ""),
    row.detail === "{}" ? "" : row.detail
  ].join("  ").trimEnd()

/** `--since`: an RFC 3339 time, or a span back from now (`30m`, `12h`, `7d`). */
const sinceMillis = (text: string, now: number): number | undefined => {
  const span = /^(\d+)([smhd])$/.exec(text.trim())
  if (span !== null) {
    return now -
      Number(span[1]) * { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[span[2] as "s" | "m" | "h" | "d"]
  }
  const at = Date.parse(text)
  return Number.isNaN(at) ? undefined : at
}

const filterOption = (name: string, description: string) =>
  Options.text(name).pipe(Options.withDescription(description), Options.optional)

/**
 * `svc admin audit`: the audit log, oldest first (operator actions, security events, machine
 * lifecycle changes), narrowed by organization, machine, actor, action and time; `--json` prints a
 * JSON array. Works beside a running server.
 */
const audit = Command.make(
  "audit",
  {
    org: filterOption("org", "Only this organization's rows (its id)"),
    machine: filterOption("machine", "Only rows about this machine (its id)"),
    actor: filterOption("actor", "Only what this actor did: a user id, `operator`, or what svc acts as (`auto_stop`)"),
    action: filterOption("action", "Only this action (`machine.delete`), or every action under a prefix (`machine`)"),
    since: filterOption("since", "Only rows from this time on: RFC 3339, or a span back from now (`30m`, `12h`, `7d`)"),
    json: Options.boolean("json").pipe(Options.withDescription("Print one JSON array instead of lines")),
    limit: Options.integer("limit").pipe(
      Options.withDescription("Print at most this many rows (the oldest first)"),
      Options.withDefault(10_000)
    ),
    dataDir: Options.text("data-dir").pipe(
      Options.withDescription("The data directory (default: SVC_DATA_DIR)"),
      Options.optional
    )
  },
  ({ action, actor, dataDir, json, limit, machine, org, since }) =>
    Effect.gen(function*() {
      const lower = (value: Option.Option<string>) => Option.getOrNull(Option.map(value, (v) => v.trim().toLowerCase()))
      const from = Option.isNone(since) ? null : sinceMillis(since.value, Date.now())
      if (from === undefined) {
        process.stderr.write(
          `svc: --since: ${JSON.stringify(Option.getOrThrow(since))} is neither RFC 3339 nor a span like 12h\n`
        )
        return process.exit(2)
      }
      const log = yield* AuditLog
      const rows = yield* log.list({
        organizationId: lower(org),
        machineId: lower(machine),
        actor: Option.getOrNull(Option.map(actor, (v) => v.trim())),
        action: Option.getOrNull(Option.map(action, (v) => v.trim())),
        since: from,
        limit: Math.max(1, limit)
      })
      if (json) {
        yield* Console.log(JSON.stringify(rows.map((row) => ({ ...row, detail: JSON.parse(row.detail) }))))
      } else {
        for (const row of rows) yield* Console.log(auditLine(row))
      }
    }).pipe(
      Effect.provide(IdentityLive.pipe(Layer.provide(AppConfig.layer))),
      withDataDir(dataDir)
    )
).pipe(
  Command.withDescription(
    "Print the audit log (operator actions, security events, machine lifecycle changes), oldest first"
  )
)

/** Whether a process of this machine has the pid (on SQLite a host's node runs beside its data dir). */
const pidAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as { code?: string }).code === "EPERM"
  }
}

/**
 * `svc admin hosts`: the hosts of the database (docs/scale-out.md), as `GET /v1/operator/hosts`
 * lists them: a table, or `--json`. On SQLite the lease is never renewed, so the one host counts as
 * live while its node's process runs.
 */
const hosts = Command.make(
  "hosts",
  {
    json: Options.boolean("json").pipe(Options.withDescription("Print the JSON of GET /v1/operator/hosts")),
    dataDir: Options.text("data-dir").pipe(
      Options.withDescription("The data directory (default: SVC_DATA_DIR)"),
      Options.optional
    )
  },
  ({ dataDir, json }) =>
    Effect.gen(function*() {
      const onSqlite = (yield* AppConfig.AppConfig).postgresUrl === undefined
      const items = (yield* listHosts((row) => onSqlite && pidAlive(Number(row.node_pid)))).map(hostDto)
      if (json) return yield* Console.log(JSON.stringify({ items }))
      const rows = [
        ["HOST", "STATE", "RUNNING", "CAPACITY", "LEASE EXPIRES", "VERSION", "INTERNAL URL"],
        ...items.map((host) => [
          host.host_id,
          host.state,
          String(host.running_machines),
          host.capacity === null ? "-" : String(host.capacity),
          host.lease_expires_at,
          host.version,
          host.internal_url
        ])
      ]
      const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
      for (const row of rows) yield* Console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd())
    }).pipe(
      Effect.provide(IdentityLive.pipe(Layer.provideMerge(AppConfig.layer))),
      withDataDir(dataDir)
    )
).pipe(
  Command.withDescription(
    "List the hosts of the database: lease state, running machines, capacity, version (--json: the API's form)"
  )
)

export const admin = Command.make("admin").pipe(
  Command.withDescription("Operator commands that act on the data directory"),
  Command.withSubcommands([bootstrap, audit, hosts, ...backupCommands, installSystemd])
)
