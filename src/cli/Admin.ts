import { Command, Options } from "@effect/cli"
import { Console, Effect, Layer, Option, Schema } from "effect"
import { IdentityLive } from "../App.js"
import { Accounts } from "../identity/Accounts.js"
import { EmailAddress } from "../identity/Api.js"
import { AuditLog, type AuditRow } from "../kernel/AuditLog.js"
import * as AppConfig from "../kernel/config/AppConfig.js"
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
    email: Options.text("email"),
    org: Options.text("org").pipe(Options.optional),
    dataDir: Options.text("data-dir").pipe(Options.optional)
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

/**
 * `svc admin audit`: the audit log, oldest first (operator actions and security events), of one
 * organization with `--org`; `--json` prints a JSON array. Works beside a running server.
 */
const audit = Command.make(
  "audit",
  {
    org: Options.text("org").pipe(Options.optional),
    json: Options.boolean("json"),
    limit: Options.integer("limit").pipe(Options.withDefault(10_000)),
    dataDir: Options.text("data-dir").pipe(Options.optional)
  },
  ({ dataDir, json, limit, org }) =>
    Effect.gen(function*() {
      const log = yield* AuditLog
      const rows = yield* log.list({
        organizationId: Option.getOrNull(Option.map(org, (id) => id.toLowerCase())),
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
).pipe(Command.withDescription("Print the audit log (operator actions), oldest first; --org ID for one organization"))

export const admin = Command.make("admin").pipe(
  Command.withDescription("Operator commands that act on the data directory"),
  Command.withSubcommands([bootstrap, audit, ...backupCommands, installSystemd])
)
