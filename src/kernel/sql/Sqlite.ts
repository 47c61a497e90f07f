/**
 * The process's one SQLite connection (better-sqlite3), offered two ways on the same handle:
 *
 * - as the `@effect/sql` SqlClient (also under `@effect/sql-sqlite-node`'s SqliteClient tag), for
 *   everything: migrations, transactions, the repositories' tagged-template queries;
 * - as `Prepared`: a prepared statement run with `Effect.sync`, for the statements every request
 *   and every operation runs (authentication, accepts, the machine actors).
 *
 * Why not `SqliteClient.layer` as is: through it a statement cost many times the prepared statement
 * called directly (a span, `Effect.scoped`, the semaphore, and a prepare cache that is an Effect
 * `Cache` with a TTL hashing the SQL text; figures in docs/benchmarks.md), and an accept with its
 * actor's work runs some twenty. This is the package's own connection with a plain `Map` of
 * prepared statements instead of that cache, plus the direct path.
 *
 * Both ways share one lock, so they see one connection as `SqliteClient` does: a statement outside
 * a transaction waits while another fiber holds a transaction open (it never runs inside a
 * transaction it is not part of), and a statement of the fiber that holds it (a group commit job
 * included) runs inside it.
 *
 * A file's connection commits with `synchronous=NORMAL` and flushes its log itself, off the event
 * loop (`Durability`, src/kernel/sql/Durability.ts): every statement that ends a commit numbers it
 * and records the number in its fiber (`LastCommit`), for whoever answers to wait on.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, Statement } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import Sqlite from "better-sqlite3"
import { Context, Effect, Exit, FiberRef, Layer, Option, Scope, Stream } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as Durability from "./Durability.js"

/** What better-sqlite3 binds (booleans are not among them). */
export type Param = string | number | bigint | Uint8Array | null | undefined

export interface PreparedShape {
  /** The rows of a query (or of a write with RETURNING). */
  readonly all: <A>(sql: string, ...params: ReadonlyArray<Param>) => Effect.Effect<ReadonlyArray<A>>
  /** The first row of a query, if any. */
  readonly first: <A>(sql: string, ...params: ReadonlyArray<Param>) => Effect.Effect<Option.Option<A>>
  /** Runs a write; answers how many rows it changed. */
  readonly run: (sql: string, ...params: ReadonlyArray<Param>) => Effect.Effect<number>
  /**
   * Runs one write once per parameter list, in one step (a tick's thousand updates): a prepared
   * single-row statement run in a loop costs less than multi-row upserts or an effect per row.
   * Answers how many rows it changed in all.
   */
  readonly runMany: (sql: string, rows: ReadonlyArray<ReadonlyArray<Param>>) => Effect.Effect<number>
  /** `INSERT INTO table (keys of row) VALUES (...)`. */
  readonly insert: (table: string, row: object) => Effect.Effect<void>
  /** `UPDATE table SET (keys of patch) WHERE id = id`; nothing for an empty patch. */
  readonly updateById: (table: string, id: string, patch: object) => Effect.Effect<void>
  /**
   * A scratch table (`CREATE TEMP TABLE IF NOT EXISTS ...`): rows of one connection only, written to
   * no log, emptied by the transaction that fills them. Answers what each transaction that uses it
   * runs first: nothing on SQLite's one connection (the table is made now), the statement itself on
   * PostgreSQL, whose pooled connections each need their own (and so never see another's rows).
   */
  readonly scratch: (ddl: string) => Effect.Effect<Effect.Effect<void>>
  /**
   * Runs `effect` in a transaction, as `sql.withTransaction` does at the top level (SqlClient
   * statements and `sql.withTransaction` inside it are part of it), for a fiber that is in none:
   * the group commit's batches. It skips what that costs per transaction (a span, a scope, and two
   * copies of the fiber's whole context), a tenth of an exec's runtime steps.
   */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * Runs a statement now, synchronously, with no lock: only for the fiber that holds the transaction
   * it belongs to (the group commit's savepoints around each job).
   */
  readonly runNow: (sql: string) => void
}

/** Prepared statements run directly on the SqlClient's connection (see the module comment). */
export class Prepared extends Context.Tag("svc/kernel/sql/Prepared")<Prepared, PreparedShape>() {}

/** Statements kept prepared; past this many distinct texts the map starts over (texts are code's own). */
const maxStatements = 1000

/** Flushes the log: calls back once everything written to it before the call is on disk. */
export type Flush = (done: (error: unknown) => void) => void

/**
 * The flush of a database file's write-ahead log: `fdatasync` on libuv's thread pool. The log's
 * directory is flushed once too, so that the log is found after a crash.
 */
const logFlush = (filename: string) => {
  let log: number | undefined
  const open = () => {
    if (log !== undefined) return log
    log = NodeFs.openSync(`${filename}-wal`, "r")
    const directory = NodeFs.openSync(NodePath.dirname(filename), "r")
    try {
      NodeFs.fsyncSync(directory)
    } finally {
      NodeFs.closeSync(directory)
    }
    return log
  }
  const flush: Flush = (done) => {
    let fd: number
    try {
      fd = open()
    } catch (error) {
      return done(error)
    }
    NodeFs.fdatasync(fd, (error) => done(error))
  }
  return {
    flush,
    flushNow: () => NodeFs.fdatasyncSync(open()),
    close: () => log !== undefined && NodeFs.closeSync(log)
  }
}

/**
 * Wraps the log's flush: tests hold flushes back to see who waits for them, also in a whole server
 * (provided around its build). The product flushes as is.
 */
export class FlushHook extends Context.Reference<FlushHook>()("svc/kernel/sql/FlushHook", {
  defaultValue: () => (flush: Flush): Flush => flush
}) {}

const make = (filename: string) =>
  Effect.gen(function*() {
    const wrapFlush = yield* FlushHook
    const db = new Sqlite(filename)
    const inMemory = filename === ":memory:" || filename === ""
    const mode = db.pragma("journal_mode = WAL", { simple: true })
    // Only a file in WAL mode has a log to flush. A file system where WAL cannot be had (SQLite
    // answers another mode) keeps SQLite's own flush in every COMMIT instead.
    const log = inMemory ? undefined : mode === "wal" ? logFlush(filename) : undefined
    const tracker = log === undefined ? undefined : Durability.make(wrapFlush(log.flush))
    db.pragma(log === undefined ? "synchronous = FULL" : "synchronous = NORMAL")
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        // Another process's connection may keep the log from being checkpointed at close.
        if (tracker?.pending()) log?.flushNow()
        log?.close()
        db.close()
      })
    )

    const statements = new Map<string, Sqlite.Statement>()
    /** Whether a write ran since the last commit was counted. */
    let dirty = false
    const prepare = (sql: string) => {
      let statement = statements.get(sql)
      if (statement === undefined) {
        if (statements.size >= maxStatements) statements.clear()
        statement = db.prepare(sql)
        statements.set(sql, statement)
      }
      // Prepared to be run: a write makes the transaction (or the statement alone) a commit to count.
      if (!statement.readonly) dirty = true
      return statement
    }
    /**
     * After each statement: the commit it ended, if it ended one (a COMMIT, or a write outside any
     * transaction), numbered and recorded in the fiber that ran it.
     */
    const counted = <A, E>(outcome: Effect.Effect<A, E>): Effect.Effect<A, E> => {
      if (!dirty || db.inTransaction || tracker === undefined) return outcome
      dirty = false
      return Effect.zipLeft(outcome, FiberRef.set(Durability.LastCommit, tracker.commit()))
    }
    const rowsOf = (sql: string, params: ReadonlyArray<unknown>): ReadonlyArray<any> => {
      const statement = prepare(sql)
      if (statement.reader) return statement.all(...params)
      statement.run(...params)
      return []
    }
    const attempt = <A>(message: string, f: () => A) =>
      Effect.suspend(() => {
        let outcome: Effect.Effect<A, SqlError>
        try {
          outcome = Effect.succeed(f())
        } catch (cause) {
          outcome = Effect.fail(new SqlError({ cause, message }))
        }
        return counted(outcome)
      })

    const execute: Connection["execute"] = (sql, params, transformRows) =>
      attempt("Failed to execute statement", () => {
        const rows = rowsOf(sql, params)
        return transformRows ? transformRows(rows) : rows
      })

    const connection: Connection = {
      execute,
      executeRaw: (sql, params) =>
        attempt("Failed to execute statement", () => {
          const statement = prepare(sql)
          return statement.reader ? statement.all(...params) : statement.run(...params)
        }),
      executeValues: (sql, params) =>
        attempt("Failed to execute statement", () => {
          const statement = prepare(sql)
          if (!statement.reader) {
            statement.run(...params)
            return []
          }
          try {
            return statement.raw(true).all(...params) as ReadonlyArray<ReadonlyArray<unknown>>
          } finally {
            statement.raw(false)
          }
        }),
      // BEGIN, COMMIT and SAVEPOINT come through here on every transaction: kept prepared too.
      executeUnprepared: (sql, params, transformRows) => execute(sql, params ?? [], transformRows),
      // The rows are read whole, then streamed: better-sqlite3 refuses any other statement on the
      // connection while an iterator is open, and a stream's consumer may run some between rows.
      executeStream: (sql, params, transformRows) =>
        Stream.flatMap(Stream.fromEffect(execute(sql, params, transformRows)), Stream.fromIterable)
    }

    // The lock: held by a transaction from BEGIN to its end; `open` mirrors it for the direct path.
    const semaphore = yield* Effect.makeSemaphore(1)
    let open = false
    const waitForTransactions = <A, E>(effect: Effect.Effect<A, E>) =>
      Effect.suspend(() => open ? semaphore.withPermits(1)(effect) : effect)
    /**
     * Takes the lock for a transaction, inside `uninterruptibleMask`: only the wait is interruptible
     * (`restore`), so a lock taken is always marked and given back by `unlock`.
     */
    const lock = (restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) =>
      Effect.zipRight(restore(semaphore.take(1)), Effect.sync(() => void (open = true)))
    const unlock = Effect.suspend(() => (open = false, semaphore.release(1)))
    const acquirer = waitForTransactions(Effect.succeed(connection))
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.zipRight(lock(restore), Effect.flatMap(Effect.scope, (scope) => Scope.addFinalizer(scope, unlock))).pipe(
        Effect.as(connection)
      )
    )

    /**
     * Runs `f` now inside this fiber's transaction, else once no other fiber holds one. When nothing
     * is to be waited for (nearly always), `f` runs in the step that looked, not in one more.
     */
    const direct = <A>(f: () => A) =>
      Effect.withFiberRuntime<A>((fiber) =>
        !open || Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)._tag === "Some"
          ? counted(Effect.succeed(f()))
          : waitForTransactions(Effect.suspend(() => counted(Effect.succeed(f()))))
      )

    const client = yield* SqlClient.make({
      acquirer,
      transactionAcquirer,
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]]
    })
    const sqlite = Object.assign(client, {
      [SqliteClient.TypeId]: SqliteClient.TypeId,
      config: { filename },
      export: waitForTransactions(Effect.sync(() => db.serialize())),
      backup: (destination: string) =>
        waitForTransactions(
          Effect.tryPromise({
            try: () => db.backup(destination),
            catch: (cause) => new SqlError({ cause, message: "Failed to backup database" })
          })
        ),
      loadExtension: (path: string) =>
        waitForTransactions(attempt("Failed to load extension", () => db.loadExtension(path)))
    }) as unknown as SqliteClient.SqliteClient

    const insertText = (table: string, keys: ReadonlyArray<string>) =>
      `INSERT INTO ${table} (${keys.map((key) => `"${key}"`).join(", ")}) VALUES (${keys.map(() => "?").join(", ")})`
    const updateText = (table: string, keys: ReadonlyArray<string>) =>
      `UPDATE ${table} SET ${keys.map((key) => `"${key}" = ?`).join(", ")} WHERE id = ?`

    /**
     * The context a transaction's statements run in: the caller's with this connection as the
     * transaction's. Made once per caller's context, not per transaction: the group commit's fiber
     * asks with the same one every time, and a copy of its whole context per batch showed in the
     * allocation profile.
     */
    let outerContext: Context.Context<never> | undefined
    let innerContext: Context.Context<never> = Context.empty()
    const inTransaction = (outer: Context.Context<never>) => {
      if (outer !== outerContext) {
        outerContext = outer
        innerContext = Context.add(outer, SqlClient.TransactionConnection, [connection, 0])
      }
      return innerContext
    }

    const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.zipRight(
          lock(restore),
          Effect.suspend(() => {
            prepare("BEGIN").run()
            // Set and put back by hand, not with Effect.locally (a scoped region of its own): this
            // runs uninterruptibly and `Effect.exit` below catches every way `effect` can end.
            return Effect.flatMap(FiberRef.get(FiberRef.currentContext), (outer) =>
              Effect.zipRight(FiberRef.set(FiberRef.currentContext, inTransaction(outer)), restore(effect)).pipe(
                Effect.exit,
                Effect.zipLeft(FiberRef.set(FiberRef.currentContext, outer))
              )).pipe(
                Effect.flatMap((exit) => {
                  try {
                    prepare(Exit.isSuccess(exit) ? "COMMIT" : "ROLLBACK").run()
                  } catch (cause) {
                    if (db.inTransaction) prepare("ROLLBACK").run()
                    return Effect.die(new SqlError({ cause, message: "Failed to commit" }))
                  }
                  return counted(exit)
                })
              )
          }).pipe(Effect.ensuring(unlock)) // whatever failed, BEGIN included
        )
      )

    const prepared: PreparedShape = {
      transaction,
      runNow: (sql) =>
        void prepare(sql).run(),
      all: <A>(sql: string, ...params: ReadonlyArray<Param>) => direct(() => prepare(sql).all(...params) as Array<A>),
      first: (sql, ...params) => direct(() => Option.fromNullable(prepare(sql).get(...params) as any)),
      run: (sql, ...params) => direct(() => prepare(sql).run(...params).changes),
      runMany: (sql, rows) =>
        rows.length === 0 ? Effect.succeed(0) : direct(() => {
          const statement = prepare(sql)
          let changes = 0
          for (const params of rows) changes += statement.run(...params).changes
          return changes
        }),
      insert: (table, row) =>
        direct(() => void prepare(insertText(table, Object.keys(row))).run(...Object.values(row))),
      updateById: (table, id, patch) => {
        const keys = Object.keys(patch)
        return keys.length === 0
          ? Effect.void
          : direct(() => void prepare(updateText(table, keys)).run(...Object.values(patch), id))
      },
      scratch: (ddl) => Effect.as(direct(() => void prepare(ddl).run()), Effect.void)
    }

    return Context.make(SqliteClient.SqliteClient, sqlite).pipe(
      Context.add(SqlClient.SqlClient, sqlite),
      Context.add(Prepared, prepared),
      Context.add(Durability.Durability, tracker?.shape ?? Durability.immediate)
    )
  })

/** The connection as SqlClient, SqliteClient, Prepared and Durability. */
export const layer = (filename: string) => Layer.scopedContext(make(filename)).pipe(Layer.provide(Reactivity.layer))
