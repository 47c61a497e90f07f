/**
 * PostgreSQL through `@effect/sql-pg` (pinned ~0.53: its `latest` is the Effect 4 line), for several
 * hosts over one database (extensions.md §21). What the package leaves to us:
 *
 * - node-postgres answers `int8` (counts, sequence numbers, `bigint` columns) and `numeric` (what
 *   `SUM` of a `bigint` is) as strings; ours are far below 2^53, so they are read as numbers, as
 *   better-sqlite3 reads them;
 * - its `notify` sends `NOTIFY chan, $1`, which PostgreSQL refuses (NOTIFY takes no parameters):
 *   `notify` here is `SELECT pg_notify($1, $2)`.
 *
 * Sessions idle inside a transaction for longer than a host's lease are ended by the server
 * (`idle_in_transaction_session_timeout`, unless the URL sets it): a node paused mid-transaction
 * (SIGSTOP, a stalled VM) would otherwise hold its row locks, and every other node's accepts for
 * that machine would wait on them until it woke.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import Pg from "pg"
import { leaseSeconds } from "./HostLease.js"

const int8 = 20
const numeric = 1700

/** node-postgres' own parsers, but `int8` and `numeric` as numbers. */
const types: Pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    (oid === int8 || oid === numeric) && format !== "binary"
      ? (value: string) => Number(value)
      : Pg.types.getTypeParser(oid, format)) as Pg.CustomTypesConfig["getTypeParser"]
}

export interface PostgresOptions {
  readonly url: string
  /** Connections in the pool; advisory locks and LISTEN each keep one of their own besides. */
  readonly maxConnections?: number
  readonly applicationName?: string
}

const idleInTransaction = "idle_in_transaction_session_timeout"

/** `url` with the server ending sessions idle in a transaction past a lease (node-postgres reads it from the URL). */
const withIdleLimit = (url: string) =>
  new RegExp(`[?&]${idleInTransaction}=`).test(url)
    ? url
    : `${url}${url.includes("?") ? "&" : "?"}${idleInTransaction}=${leaseSeconds * 1000}`

/** The SqlClient (and PgClient) of a PostgreSQL database. */
export const layer = (options: PostgresOptions): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, unknown> =>
  PgClient.layer({
    url: Redacted.make(withIdleLimit(options.url)),
    maxConnections: options.maxConnections ?? 10,
    applicationName: options.applicationName ?? "svc",
    types
  })

/** Sends a notification (after the commit of the transaction it runs in, if any). */
export const notify = (channel: string, payload: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT pg_notify(${channel}, ${payload})`).pipe(Effect.asVoid)
