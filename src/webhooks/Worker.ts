/**
 * The webhook sender: reads due deliveries from the outbox table and sends them, signed, through
 * the SSRF guard (src/kernel/http/Outbound.ts). Woken by the bus when events that may have
 * deliveries are committed (and flushed), by the end of each attempt, and by its own timer at the
 * next retry's time; the table is the truth, so a restart (or a lost wake) misses nothing, and a
 * delivery that was in flight at a crash is sent again with the same `webhook-id`.
 *
 * Each endpoint has its own lane of at most `perEndpoint` attempts in flight: a receiver that
 * hangs holds its own lane for up to 10 s per attempt and never the others'.
 */
import { Clock, Context, Duration, Effect, Either, Layer, Queue } from "effect"
import { SecretBox } from "../kernel/crypto/SecretBox.js"
import { DomainEvents } from "../kernel/events/DomainEvents.js"
import { recordable } from "../kernel/events/EventRecorders.js"
import { Outbound } from "../kernel/http/Outbound.js"
import { nextAttemptAfter, truncateError } from "./Events.js"
import { type DueDelivery, WebhooksRepo } from "./Repo.js"
import { signedHeaders } from "./Signature.js"

/** Attempts in flight at once per endpoint. */
export const perEndpoint = 16
/** Longest sleep without a wake (a safety net; every change wakes the sender). */
const idleMillis = 60_000

export interface WebhookSenderShape {
  /** Makes the sender look at the table now. */
  readonly wake: Effect.Effect<void>
  /** Attempts in flight (for tests). */
  readonly inFlight: () => number
}

export class WebhookSender extends Context.Tag("svc/webhooks/WebhookSender")<WebhookSender, WebhookSenderShape>() {
  static readonly layer = Layer.scoped(
    WebhookSender,
    Effect.gen(function*() {
      const repo = yield* WebhooksRepo
      const outbound = yield* Outbound
      const box = yield* SecretBox
      const bus = yield* DomainEvents
      const wakes = yield* Queue.sliding<void>(1)
      const wake = Queue.offer(wakes, undefined).pipe(Effect.asVoid)
      const inFlight = new Set<string>()
      const lanes = new Map<string, number>()
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
          yield* repo.attempted(delivery.id, {
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
          })
        })

      const start = (delivery: DueDelivery) => {
        inFlight.add(delivery.id)
        lanes.set(delivery.webhook_id, (lanes.get(delivery.webhook_id) ?? 0) + 1)
        return Effect.forkIn(
          attempt(delivery).pipe(
            Effect.catchAllCause((cause) => Effect.logError("webhook delivery attempt", cause)),
            Effect.ensuring(Effect.suspend(() => {
              inFlight.delete(delivery.id)
              const left = (lanes.get(delivery.webhook_id) ?? 1) - 1
              if (left === 0) lanes.delete(delivery.webhook_id)
              else lanes.set(delivery.webhook_id, left)
              return wake
            }))
          ),
          scope
        )
      }

      /** Starts what is due in every lane with room; answers how long to sleep. */
      const round = Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        for (const { id } of yield* repo.endpointsDue(now)) {
          const room = perEndpoint - (lanes.get(id) ?? 0)
          if (room <= 0) continue
          const due = yield* repo.due(id, now, room + perEndpoint)
          let started = 0
          for (const delivery of due) {
            if (started >= room) break
            if (inFlight.has(delivery.id)) continue
            yield* start(delivery)
            started++
          }
        }
        const next = yield* repo.nextDue()
        return next === null ? idleMillis : Math.min(idleMillis, Math.max(next - now, 0))
      })

      const events = yield* bus.subscribe(recordable)
      yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Queue.take(events), wake)))
      yield* Effect.forkScoped(Effect.forever(
        Effect.gen(function*() {
          const sleep = yield* round.pipe(
            Effect.catchAllCause((cause) => Effect.as(Effect.logError("webhook sender", cause), 1_000))
          )
          // Sleeps until the next due attempt or a wake, whichever comes first. A due time in the
          // past with every lane full waits for an attempt to end (which wakes).
          yield* Effect.raceFirst(Queue.take(wakes), Effect.sleep(Duration.millis(sleep === 0 ? idleMillis : sleep)))
          yield* Queue.takeAll(wakes)
        })
      ))
      return { wake, inFlight: () => inFlight.size }
    })
  )
}
