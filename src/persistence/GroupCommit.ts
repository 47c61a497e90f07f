/**
 * Group commit: concurrent writers that each need their own transaction share one SQLite commit.
 *
 * Each commit costs statements, log writes and a flush of the log: one commit per accepted
 * operation caps throughput and makes every other request wait behind it. Here each job runs inside
 * one outer transaction as a savepoint of its own (a failing job rolls back alone), and all of them
 * are acknowledged once the outer transaction has committed and its flush has ended (Durability:
 * the flush runs off the event loop, and the next batch commits meanwhile), so durability still
 * comes before every answer.
 *
 * Each job's savepoint is released when the job ends. `sql.withTransaction` never releases its
 * savepoints, so a batch of N jobs nested N savepoints deep, and SQLite copied every page a job
 * touched into each level's sub-journal: inserts cost 2-3 times as much as in a flat transaction.
 */
import { SqlClient } from "@effect/sql"
import { Context, Deferred, Effect, Exit, FiberRef, Layer, Queue } from "effect"
import { Durability, LastCommit } from "./Durability.js"
import { Prepared } from "./Sqlite.js"

interface Job {
  readonly run: Effect.Effect<unknown, unknown, SqlClient.SqlClient>
  readonly done: Deferred.Deferred<unknown, unknown>
  /** Answered as soon as it ran, before the commit is durable (see `applied`). */
  readonly early: boolean
  /** The number of the commit that holds it, once committed (Durability). */
  seq: number
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
      const prepared = yield* Prepared
      const durability = yield* Durability
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
          prepared.transaction,
          Effect.exit,
          // The commit's number, recorded by the connection in this fiber: what its jobs wait to be flushed.
          Effect.zipLeft(Effect.map(FiberRef.get(LastCommit), (seq) => jobs.forEach((job) => job.seq = seq))),
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
          const queued: Job = { run: job, done, early, seq: 0 }
          yield* Queue.offer(queue, queued)
          const answer = (yield* Deferred.await(done)) as A
          // Committed; answered once the flush that holds its commit has ended.
          if (!early) yield* durability.syncThrough(queued.seq)
          return answer
        }) as Effect.Effect<A, E>

      return { transaction: enqueue(false), applied: enqueue(true) }
    })
  )
}
