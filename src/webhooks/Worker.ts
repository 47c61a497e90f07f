/**
 * The webhook sender: sends the outbox's due deliveries, signed, through the SSRF guard
 * (src/kernel/http/Outbound.ts). The table is the truth: a restart (or a lost wake) misses nothing,
 * and a delivery in flight at a crash, or whose outcome was not yet written, is sent again with the
 * same `webhook-id`.
 *
 * Each endpoint has a lane: a buffer of its due rows, read a few hundred at a time, and at most
 * `perEndpoint` attempts in flight. An attempt that ends starts the next one from the buffer without
 * a query, so a receiver that hangs holds its own lane (up to 10 s per attempt) and never the others'.
 * Outcomes are written in batches, one transaction each (a first version re-queried the due
 * endpoints and wrote each outcome on its own after every attempt: 556-699 deliveries/s).
 * Rows read into a buffer and not yet written back are `claimed`, so no read takes them twice.
 *
 * The sender looks at the table (a round) when the bus says events were committed, when an outcome
 * batch scheduled a retry, when a lane's buffer ran low, and at the next retry's time.
 *
 * It runs on one node at a time (Singletons.ts); its lanes and claims are that run's. Every node
 * wakes it through the signals (`webhooks`: "" to look at the table, an endpoint's id to drop what
 * its lane holds), and on PostgreSQL it also looks every 10 s (Signals.ts `poll`), the safety net
 * for a signal lost on the way. A node that takes it over sends what is due, again with the same
 * `webhook-id` for what its dead predecessor had in flight.
 */
import { Clock, Context, Duration, Effect, Either, Layer, Queue } from "effect"
import { SecretBox } from "../kernel/crypto/SecretBox.js"
import { DomainEvents } from "../kernel/events/DomainEvents.js"
import { recordable } from "../kernel/events/EventRecorders.js"
import { OutboxMarks } from "../kernel/events/OutboxMarks.js"
import { Signals } from "../kernel/events/Signals.js"
import { Outbound } from "../kernel/http/Outbound.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { Singletons } from "../kernel/sql/Singletons.js"
import { nextAttemptAfter, truncateError } from "./Events.js"
import { type AttemptPatch, type DueDelivery, WebhooksRepo } from "./Repo.js"
import { signedHeaders } from "./Signature.js"

/** Attempts in flight at once per endpoint. */
export const perEndpoint = 16
/** Due rows a lane holds ready; it reads more when it falls below half. */
const bufferSize = 256
/** Outcomes written per transaction at most. */
const writeBatch = 1024
/** Longest sleep while something is pending (a safety net; every change wakes the sender). */
const idleMillis = 60_000
/** The signals' channel: "" wakes the sender, an endpoint's id drops its lane's buffer. */
const channel = "webhooks"

export interface WebhookSenderShape {
  /** Makes the sender look at the table now. */
  readonly wake: Effect.Effect<void>
  /** Drops what an endpoint's lane holds unsent (it was changed: URL, secret, enabled). */
  readonly forget: (webhookId: string) => Effect.Effect<void>
  /** Attempts in flight on this node (for tests). */
  readonly inFlight: () => number
}

interface Lane {
  readonly buffer: Array<DueDelivery>
  inFlight: number
  /** Its rows claimed: buffered, in flight, or with an outcome not yet written. */
  held: number
  /** The last read was cut by its limit: more may be due. */
  more: boolean
}

export class WebhookSender extends Context.Tag("svc/webhooks/WebhookSender")<WebhookSender, WebhookSenderShape>() {
  static readonly layer = Layer.scoped(
    WebhookSender,
    Effect.gen(function*() {
      const repo = yield* WebhooksRepo
      const outbound = yield* Outbound
      const box = yield* SecretBox
      const bus = yield* DomainEvents
      const commit = yield* GroupCommit
      const signals = yield* Signals
      let inFlightNow = () => 0
      /** The running sender's `forget`, when this node holds it: applied before the change is answered. */
      let forgetHere: (webhookId: string) => Effect.Effect<void> = () => Effect.void

      /** The sender of the node that holds it: its state lives as long as its run. */
      const sending = Effect.scoped(Effect.gen(function*() {
        const wakes = yield* Queue.sliding<void>(1)
        const wake = Queue.offer(wakes, undefined).pipe(Effect.asVoid)
        const outcomes = yield* Queue.unbounded<{ readonly id: string; readonly patch: AttemptPatch }>()
        const lanes = new Map<string, Lane>()
        const claimed = new Map<string, Lane>()
        const release = (id: string) => {
          const lane = claimed.get(id)
          if (lane === undefined) return
          claimed.delete(id)
          lane.held--
        }
        let inFlight = 0
        /** Opened secrets by their sealed text: a rotation changes the sealed text, so it applies at once. */
        const secrets = new Map<string, string>()
        const scope = yield* Effect.scope

        const secretOf = (sealed: string) =>
          Effect.suspend(() => {
            const known = secrets.get(sealed)
            if (known !== undefined) return Effect.succeed(known)
            return Effect.tap(box.open(sealed), (secret) => {
              if (secrets.size > 1000) secrets.clear()
              secrets.set(sealed, secret)
            })
          })

        const attempt = (delivery: DueDelivery) =>
          Effect.gen(function*() {
            const secret = yield* secretOf(delivery.sealed_secret)
            const startedAt = yield* Clock.currentTimeMillis
            const headers = signedHeaders(secret, delivery.event_id, Math.floor(startedAt / 1000), delivery.body)
            const answer = yield* Effect.either(outbound.post(delivery.url, headers, delivery.body))
            const now = yield* Clock.currentTimeMillis
            const attempts = delivery.attempt_count + 1
            const ok = Either.isRight(answer) && answer.right.status >= 200 && answer.right.status < 300
            const next = ok ? undefined : nextAttemptAfter(attempts, now)
            const patch: AttemptPatch = {
              status: ok ? "succeeded" : next === undefined ? "failed" : "pending",
              attempt_count: attempts,
              delivered_at: ok ? now : null,
              last_attempt_at: now,
              next_attempt_at: next ?? null,
              last_status_code: Either.isRight(answer) ? answer.right.status : null,
              last_error: ok
                ? null
                : truncateError(
                  Either.isRight(answer)
                    ? `HTTP ${answer.right.status}: ${answer.right.body}`
                    : answer.left.message
                )
            }
            yield* Queue.offer(outcomes, { id: delivery.id, patch })
          })

        /** Starts what the lane's buffer holds, up to its room; asks for a read when it runs low. */
        const pump = (lane: Lane): Effect.Effect<void> =>
          Effect.suspend(() => {
            let starts: Effect.Effect<unknown> = Effect.void
            while (lane.inFlight < perEndpoint && lane.buffer.length > 0) {
              const delivery = lane.buffer.shift()!
              lane.inFlight++
              inFlight++
              starts = Effect.zipRight(starts, Effect.forkIn(run(lane, delivery), scope))
            }
            const low = lane.more && lane.buffer.length < bufferSize / 2
            return Effect.zipRight(starts, low ? wake : Effect.void)
          })

        const run = (lane: Lane, delivery: DueDelivery) =>
          attempt(delivery).pipe(
            Effect.catchAllCause((cause) =>
              // Its outcome is unknown: released, so a later read sends it again.
              Effect.zipRight(
                Effect.sync(() => release(delivery.id)),
                Effect.logError("webhook delivery attempt", cause)
              )
            ),
            Effect.ensuring(Effect.suspend(() => {
              lane.inFlight--
              inFlight--
              return pump(lane)
            }))
          )

        /** Reads the lane's due rows that no buffer or attempt holds yet. */
        const refill = (webhookId: string, lane: Lane, now: number) => {
          const limit = lane.held + bufferSize
          return Effect.map(repo.due(webhookId, now, limit), (rows) => {
            // Filtered and claimed in one synchronous step: a read running beside it cannot take them too.
            lane.more = rows.length === limit
            for (const row of rows) {
              if (lane.buffer.length >= bufferSize) {
                lane.more = true
                break
              }
              if (claimed.has(row.id)) continue
              claimed.set(row.id, lane)
              lane.held++
              lane.buffer.push(row)
            }
          })
        }

        /**
         * Tops up every due endpoint's lane and starts what fits; answers when to look again (undefined:
         * at a wake, nothing is pending: only a recorded event or a change of an endpoint makes work).
         * A time, not a duration: the round's reads take time, and the sleep is measured from its start.
         */
        const round = Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          for (const { id } of yield* repo.endpointsDue(now)) {
            let lane = lanes.get(id)
            if (lane === undefined) {
              lane = { buffer: [], inFlight: 0, held: 0, more: false }
              lanes.set(id, lane)
            }
            if (lane.buffer.length < bufferSize / 2) yield* refill(id, lane, now)
            yield* pump(lane)
          }
          for (const [id, lane] of lanes) {
            if (lane.held === 0) lanes.delete(id)
          }
          const next = yield* repo.nextDue()
          // A due time in the past is a row in flight or buffered: its end, or a low buffer, wakes.
          if (next === null) return undefined
          return next <= now ? now + idleMillis : Math.min(now + idleMillis, next)
        })

        /** Writes outcomes in batches, one transaction each; a scheduled retry wakes the sender. */
        const writer = Effect.gen(function*() {
          const batch = yield* Queue.takeBetween(outcomes, 1, writeBatch)
          yield* commit.transaction(Effect.forEach(batch, ({ id, patch }) => repo.attempted(id, patch), {
            discard: true
          })).pipe(Effect.catchAllCause((cause) => Effect.logError("webhook outcomes not written", cause)))
          let retry = false
          for (const { id, patch } of batch) {
            release(id)
            if (patch.status === "pending") retry = true
          }
          if (retry) yield* wake
        })

        const forget = (webhookId: string) =>
          Effect.sync(() => {
            const lane = lanes.get(webhookId)
            if (lane === undefined) return
            for (const row of lane.buffer.splice(0)) release(row.id)
            lane.more = true
          })
        const heard = yield* signals.subscribe(channel)
        yield* Effect.forkScoped(
          Effect.forever(
            Effect.flatMap(
              heard.take,
              (webhookId) => Effect.zipRight(webhookId === "" ? Effect.void : forget(webhookId), wake)
            )
          )
        )
        inFlightNow = () => inFlight
        forgetHere = forget
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            inFlightNow = () => 0
            forgetHere = () => Effect.void
          })
        )
        yield* Effect.forkScoped(Effect.forever(writer))
        return yield* Effect.forever(
          Effect.gen(function*() {
            const due = yield* round.pipe(
              Effect.catchAllCause((cause) =>
                Effect.zipRight(
                  Effect.logError("webhook sender", cause),
                  Effect.map(Clock.currentTimeMillis, (now) => now + 1_000)
                )
              )
            )
            const now = yield* Clock.currentTimeMillis
            const woken = Effect.raceFirst(Queue.take(wakes), signals.poll)
            if (due === undefined) yield* woken
            else yield* Effect.raceFirst(woken, Effect.sleep(Duration.millis(Math.max(0, due - now))))
            yield* Queue.takeAll(wakes)
          })
        )
      }))

      // Every node: an event wakes the sender once its transaction wrote deliveries (the recorder's mark).
      const marks = yield* OutboxMarks
      const events = yield* bus.subscribe(marks.whenMarked("webhooks", recordable))
      yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Queue.take(events), signals.notify(channel))))
      yield* Effect.forkScoped((yield* Singletons).run("webhook sender", sending))
      return {
        wake: signals.notify(channel),
        forget: (webhookId) =>
          Effect.zipRight(Effect.suspend(() => forgetHere(webhookId)), signals.notify(channel, webhookId)),
        inFlight: () => inFlightNow()
      }
    })
  )
}
