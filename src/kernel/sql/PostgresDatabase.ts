/**
 * The database on PostgreSQL (`SVC_DATABASE_URL=postgres://...`, extensions.md §21): the same
 * services as the SQLite file's (SqlClient, Prepared, Durability), so every repository runs on both.
 *
 * - `Prepared` runs its SQLite-style texts (`?` placeholders, Dialect.ts) as pooled queries.
 * - Transactions of one node are taken one at a time, as on SQLite's one connection: the
 *   repositories' read-then-write steps (idempotency, count limits, the meter) were written for a
 *   single writer. Several nodes writing at once need the row locks of the scale-out work.
 * - Commits are durable when PostgreSQL answers (synchronous_commit), so Durability is immediate.
 * - Migrations run under a session advisory lock, so nodes starting together apply them once.
 */
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Context, Effect, Layer, Option } from "effect"
import { placeholdersForPostgres } from "./Dialect.js"
import * as Durability from "./Durability.js"
import * as Postgres from "./Postgres.js"
import { type Param, Prepared, type PreparedShape } from "./Sqlite.js"

/** node-postgres sends a bigint parameter as text only when told. */
const pgParams = (params: ReadonlyArray<Param>) =>
  params.map((param) => typeof param === "bigint" ? String(param) : param)

const rowCount = (result: unknown) => Number((result as { rowCount?: number | null }).rowCount ?? 0)

const make = Effect.gen(function*() {
  const client = yield* SqlClient.SqlClient
  const semaphore = yield* Effect.makeSemaphore(1)
  /** A transaction of this node's, one at a time; a nested one joins its outer transaction. */
  const withTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
    Effect.flatMap(
      Effect.serviceOption(SqlClient.TransactionConnection),
      (outer) =>
        Option.isSome(outer) ? client.withTransaction(effect) : semaphore.withPermits(1)(client.withTransaction(effect))
    )
  // The client is a tagged-template function: a new function with its members and this transaction.
  const sql = Object.assign(
    ((...args: Parameters<SqlClient.SqlClient>) => client(...args)) as SqlClient.SqlClient,
    client,
    { withTransaction }
  )

  const texts = new Map<string, string>()
  const pg = (text: string) => {
    let translated = texts.get(text)
    if (translated === undefined) {
      if (texts.size >= 1000) texts.clear()
      translated = placeholdersForPostgres(text)
      texts.set(text, translated)
    }
    return translated
  }
  const rows = <A>(text: string, params: ReadonlyArray<Param>) =>
    Effect.orDie(sql.unsafe<A & object>(pg(text), pgParams(params))) as Effect.Effect<ReadonlyArray<A>>
  const changes = (text: string, params: ReadonlyArray<Param>) =>
    Effect.orDie(Effect.map(sql.unsafe(pg(text), pgParams(params)).raw, rowCount))

  const prepared: PreparedShape = {
    all: (text, ...params) => rows(text, params),
    first: (text, ...params) => Effect.map(rows(text, params), (found) => Option.fromNullable(found[0] as any)),
    run: (text, ...params) => changes(text, params),
    runMany: (text, list) =>
      Effect.reduce(list, 0, (total, params) => Effect.map(changes(text, params), (n) => total + n)),
    insert: (table, row) => {
      const keys = Object.keys(row)
      return Effect.asVoid(changes(
        `INSERT INTO ${table} (${keys.map((key) => `"${key}"`).join(", ")}) VALUES (${keys.map(() => "?").join(", ")})`,
        Object.values(row)
      ))
    },
    updateById: (table, id, patch) => {
      const keys = Object.keys(patch)
      return keys.length === 0 ? Effect.void : Effect.asVoid(changes(
        `UPDATE ${table} SET ${keys.map((key) => `"${key}" = ?`).join(", ")} WHERE id = ?`,
        [...Object.values(patch), id]
      ))
    },
    scratch: (ddl) => Effect.succeed(Effect.asVoid(changes(ddl, []))),
    transaction: (effect) =>
      withTransaction(effect).pipe(
        Effect.catchIf((error): error is SqlError => error instanceof SqlError, (error) => Effect.die(error))
      ) as any,
    runNow: () => {
      throw new Error("runNow is SQLite's group commit's; PostgreSQL commits each job on its own")
    }
  }
  return Context.make(SqlClient.SqlClient, sql).pipe(
    Context.add(Prepared, prepared),
    Context.add(Durability.Durability, Durability.immediate)
  )
})

/** The services of a PostgreSQL database (not yet migrated: see Database.ts). */
export const layer = (url: string) =>
  Layer.effectContext(make).pipe(Layer.provide(Postgres.layer({ url, maxConnections: 10 })))

/** Runs `effect` holding a session advisory lock (on a connection of its own, for its duration). */
export const withAdvisoryLock = (name: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const connection = yield* sql.reserve
    yield* connection.executeRaw("SELECT pg_advisory_lock(hashtext($1))", [name])
    yield* Effect.addFinalizer(() =>
      Effect.ignore(connection.executeRaw("SELECT pg_advisory_unlock(hashtext($1))", [name]))
    )
    return yield* effect
  }))
