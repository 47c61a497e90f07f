/**
 * Group commit: concurrent writers that each need their own transaction share one SQLite commit.
 *
 * With `synchronous=FULL` every commit waits for the disk, and better-sqlite3 does so on the event
 * loop, so one commit per accepted operation caps throughput at a few thousand per second and makes
 * every other request wait behind it. Here each job runs inside one outer transaction as a
 * savepoint of its own (a failing job rolls back alone), and all of them are acknowledged once the
 * outer transaction has committed, so durability still comes before every answer.
 *
 * Each job's savepoint is released when the job ends. `sql.withTransaction` never releases its
 * savepoints, so a batch of N jobs nested N savepoints deep, and SQLite copied every page a job
 * touched into each level's sub-journal: inserts cost 2-3 times as much as in a flat transaction.
 */
import { SqlClient } from "@effect/sql"
import { Context, Deferred, Effect, Exit, Layer, Queue } from "effect"
import { Prepared } from "./Sqlite.js"

interface Job {
  readonly run: Effect.Effect<unknown, unknown, SqlClient.SqlClient>
  readonly done: Deferred.Deferred<unknown, unknown>
  /** Answered as soon as it ran, before the commit is durable (see `applied`). */
  readonly early: boolean
}

/** Most jobs in one commit; more wait for the next one, which starts at once. */
const maxBatch = 1024

export interface GroupCommitShape {
  /** Runs `job` in a transaction that is committed, with others, before this answers. */
  readonly transaction: <A, E>(job: Effect.Effect<A, E, SqlClient.SqlClient>) => Effect.Effect<A, E>
  /**
   * Runs `job` in the next commit like `transaction`, but answers as soon as the job ran: its
   * writes become durable a moment later, with the commit, or not at all if svc dies first. For work
   * that may run while its record reaches the disk (an operation claimed before its command starts:
   * the machine's claim file, not this row, keeps the command from running twice). Everything
   * written later is committed with it or after it.
   */
  readonly applied: <A, E>(job: Effect.Effect<A, E, SqlClient.SqlClient>) => Effect.Effect<A, E>
}

export class GroupCommit extends Context.Tag("svc/persistence/GroupCommit")<GroupCommit, GroupCommitShape>() {
  static readonly layer = Layer.scoped(
    GroupCommit,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const prepared = yield* Prepared
      const queue = yield* Queue.unbounded<Job>()

      /** The job in a savepoint of its own: rolled back alone when it fails, released either way. */
      const inSavepoint = (job: Job) =>
        Effect.zipRight(prepared.run("SAVEPOINT group_commit_job"), Effect.exit(job.run)).pipe(
          Effect.tap((exit) => Exit.isFailure(exit) ? prepared.run("ROLLBACK TO group_commit_job") : Effect.void),
          Effect.zipLeft(prepared.run("RELEASE group_commit_job"))
        )

      const commitBatch = (jobs: ReadonlyArray<Job>) =>
        Effect.forEach(
          jobs,
          (job) => Effect.tap(inSavepoint(job), (exit) => job.early ? Deferred.done(job.done, exit) : Effect.void),
          { concurrency: 1 }
        ).pipe(
          // The fibers answered early go ahead (a command is handed to its machine) while the
          // commit below waits for the disk with the event loop.
          Effect.zipLeft(jobs.some((job) => job.early) ? Effect.yieldNow() : Effect.void),
          sql.withTransaction,
          Effect.provideService(SqlClient.SqlClient, sql),
          Effect.exit,
          Effect.flatMap((outer) =>
            Effect.forEach(jobs, (job, index) =>
              job.early ? Effect.void : Deferred.done(
                job.done,
                Exit.isSuccess(outer) ? outer.value[index]! : Exit.die(Exit.isFailure(outer) ? outer.cause : outer)
              ))
          )
        )

      // After the first job, let the event loop turn once: the requests that arrived in the same
      // I/O phase queue their jobs meanwhile and share this commit.
      const nextBatch = Queue.take(queue).pipe(
        Effect.zipLeft(Effect.async<void>((resume) => void setImmediate(() => resume(Effect.void)))),
        Effect.flatMap((first) => Effect.map(Queue.takeUpTo(queue, maxBatch - 1), (rest) => [first, ...rest]))
      )
      yield* nextBatch.pipe(
        Effect.flatMap(commitBatch),
        Effect.forever,
        Effect.forkScoped
      )

      const enqueue = (early: boolean) => <A, E>(job: Effect.Effect<A, E, SqlClient.SqlClient>) =>
        Effect.gen(function*() {
          const done = yield* Deferred.make<unknown, unknown>()
          yield* Queue.offer(queue, { run: job, done, early })
          return (yield* Deferred.await(done)) as A
        }) as Effect.Effect<A, E>

      return { transaction: enqueue(false), applied: enqueue(true) }
    })
  )
}
