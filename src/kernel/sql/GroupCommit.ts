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
 * touched into each level's sub-journal, which made inserts much dearer than in a flat transaction.
 */
import { SqlClient } from "@effect/sql"
import { Context, Deferred, Effect, Exit, FiberId, FiberRef, Layer } from "effect"
import { commitBatchJobs } from "../metrics/Metrics.js"
import { Durability, LastCommit } from "./Durability.js"
import { Prepared } from "./Sqlite.js"

interface Job {
  readonly run: Effect.Effect<unknown, unknown, SqlClient.SqlClient>
  readonly done: Deferred.Deferred<unknown, unknown>
  /** Answered as soon as it ran, before the commit is durable (see `applied`). */
  readonly early: boolean
  /** Run by the committer once the job is committed, before its flush (see `transaction`). */
  readonly committed: ((value: unknown) => Effect.Effect<void>) | undefined
  /** The number of the commit that holds it, once committed (Durability). */
  seq: number
}

/** Most jobs in one commit; more wait for the next one, which starts at once. */
const maxBatch = 1024

export interface GroupCommitShape {
  /**
   * Runs `job` in a transaction that is committed, with others, and on disk before this answers.
   * `committed`, if given, runs once the job succeeded and is committed, while its flush runs: for
   * work that may start as soon as others can read the job's rows (waking the actor that carries an
   * accepted operation out; it answers nobody). It runs in the committer's fiber, not the caller's,
   * and a failure of it is logged, not answered.
   */
  readonly transaction: <A, E>(
    job: Effect.Effect<A, E, SqlClient.SqlClient>,
    committed?: (value: A) => Effect.Effect<void>
  ) => Effect.Effect<A, E>
  /**
   * Runs `job` in the next commit like `transaction`, but answers as soon as the job ran: its
   * writes become durable a moment later, with the commit, or not at all if svc dies first. For work
   * that may run while its record reaches the disk (an operation claimed before its command starts:
   * the machine's claim file, not this row, keeps the command from running twice). Everything
   * written later is committed with it or after it.
   */
  readonly applied: <A, E>(job: Effect.Effect<A, E, SqlClient.SqlClient>) => Effect.Effect<A, E>
}

export class GroupCommit extends Context.Tag("svc/kernel/sql/GroupCommit")<GroupCommit, GroupCommitShape>() {
  static readonly layer = Layer.scoped(
    GroupCommit,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      if (sql.onDialectOrElse({ pg: () => true, orElse: () => false })) return yield* perJob
      const prepared = yield* Prepared
      const durability = yield* Durability
      // The jobs waiting for the next batch, and the committer's wake-up while it waits for one.
      // A plain array rather than a Queue: taking a batch from a Queue (take, then takeUpTo) cost
      // runtime steps on the path of every accept, claim and settle.
      const waiting: Array<Job> = []
      let wake: (() => void) | undefined

      /**
       * Each job in a savepoint of its own (rolled back alone when it fails, released either way),
       * all in one transaction; the early ones are answered as soon as they ran. Written as one loop
       * with the savepoints run synchronously: a batch is on the path of every accept and every
       * operation's claim and settle, and each Effect step there is paid three times per exec.
       */
      const runJobs = (jobs: ReadonlyArray<Job>) =>
        Effect.gen(function*() {
          const exits: Array<Exit.Exit<unknown, unknown>> = []
          for (const job of jobs) {
            prepared.runNow("SAVEPOINT group_commit_job")
            const exit = yield* Effect.exit(job.run)
            if (Exit.isFailure(exit)) prepared.runNow("ROLLBACK TO group_commit_job")
            prepared.runNow("RELEASE group_commit_job")
            if (job.early) Deferred.unsafeDone(job.done, exit)
            exits.push(exit)
          }
          return exits
        })

      /**
       * A job alone in its batch (most of them when the host is not busy) runs without a savepoint:
       * the transaction is its own and rolls back with it: two statements less per job.
       */
      const runAlone = (job: Job) =>
        Effect.flatMap(Effect.exit(job.run), (exit) => {
          if (job.early) Deferred.unsafeDone(job.done, exit)
          return exit
        })

      /** Each job's own exit; all die together if the batch's commit failed. */
      const runBatch = (
        jobs: ReadonlyArray<Job>
      ): Effect.Effect<ReadonlyArray<Exit.Exit<unknown, unknown>>, never, SqlClient.SqlClient> =>
        jobs.length === 1
          ? Effect.map(Effect.exit(prepared.transaction(runAlone(jobs[0]!))), (exit) => [exit])
          : Effect.map(
            Effect.exit(prepared.transaction(runJobs(jobs))),
            (outer) => Exit.isSuccess(outer) ? outer.value : jobs.map(() => Exit.die(outer.cause))
          )

      const commitBatch = (jobs: ReadonlyArray<Job>) =>
        Effect.gen(function*() {
          commitBatchJobs.unsafeUpdate(jobs.length, [])
          const exits = yield* runBatch(jobs)
          // The commit's number, recorded by the connection in this fiber: what its jobs wait to be flushed.
          const seq = yield* FiberRef.get(LastCommit)
          for (const [index, job] of jobs.entries()) {
            job.seq = seq
            const exit = exits[index]!
            if (job.committed !== undefined && Exit.isSuccess(exit)) {
              yield* job.committed(exit.value).pipe(
                Effect.catchAllCause((cause) => Effect.logError("after a commit", cause))
              )
            }
            if (!job.early) Deferred.unsafeDone(job.done, exit)
          }
        })

      // After the first job, let the event loop turn once: the requests that arrived in the same
      // I/O phase queue their jobs meanwhile and share this commit.
      const nextBatch = Effect.async<Array<Job>>((resume) => {
        let turn: NodeJS.Immediate | undefined
        const take = () => {
          wake = undefined
          turn = setImmediate(() => resume(Effect.succeed(waiting.splice(0, maxBatch))))
        }
        if (waiting.length > 0) take()
        else wake = take
        // Interrupted (the layer's scope closes): the jobs stay where they are.
        return Effect.sync(() => {
          wake = undefined
          if (turn !== undefined) clearImmediate(turn)
        })
      })
      yield* nextBatch.pipe(
        Effect.flatMap(commitBatch),
        Effect.forever,
        Effect.forkScoped
      )

      const enqueue = (early: boolean) =>
      <A, E>(
        job: Effect.Effect<A, E, SqlClient.SqlClient>,
        committed?: (value: A) => Effect.Effect<void>
      ): Effect.Effect<A, E> =>
        Effect.suspend(() => {
          const queued: Job = {
            run: job,
            done: Deferred.unsafeMake(FiberId.none),
            early,
            committed: committed as Job["committed"],
            seq: 0
          }
          waiting.push(queued)
          wake?.()
          const answered = Deferred.await(queued.done) as Effect.Effect<A, E>
          // Committed; answered once the flush that holds its commit has ended.
          return early ? answered : Effect.zipLeft(answered, Effect.suspend(() => durability.syncThrough(queued.seq)))
        })

      return { transaction: enqueue(false), applied: enqueue(true) }
    })
  )
}

/**
 * PostgreSQL's: each job its own transaction (taken one at a time per node: PostgresDatabase.ts),
 * durable when it answers; `committed` runs after the commit, uninterruptibly with it, so an
 * accepted operation's actor is always woken.
 */
const perJob = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const prepared = yield* Prepared
  const run = <A, E>(
    job: Effect.Effect<A, E, SqlClient.SqlClient>,
    committed?: (value: A) => Effect.Effect<void>
  ): Effect.Effect<A, E> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.tap(
        restore(prepared.transaction(Effect.provideService(job, SqlClient.SqlClient, sql))),
        (value) =>
          committed === undefined ? Effect.void : committed(value).pipe(
            Effect.catchAllCause((cause) => Effect.logError("after a commit", cause))
          )
      )
    )
  return { transaction: run, applied: run } satisfies GroupCommitShape
})
