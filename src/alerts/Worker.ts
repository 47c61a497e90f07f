/**
 * The alert sender: mails the alerts' outbox (Recorder.ts) through the kernel's Mail service. A
 * member's pending alerts of one type and machine go out as one e-mail, at most once per 10 minutes
 * (what arrives within the window waits for its end and goes out together). Woken by the bus when
 * an operation settles, and by its own timer at the next due time; the table is the truth, so a
 * restart misses nothing, and an e-mail sent just before a crash may be sent again (at least once).
 *
 * It runs on one node at a time (Singletons.ts). Every node wakes it through the signals
 * (`alerts`), and on PostgreSQL it also looks every 10 s (Signals.ts `poll`), the safety net for a
 * signal lost on the way.
 */
import { Clock, Context, Duration, Effect, Layer, Option, Queue } from "effect"
import { Accounts } from "../identity/Accounts.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { DomainEvents } from "../kernel/events/DomainEvents.js"
import { OutboxMarks } from "../kernel/events/OutboxMarks.js"
import { Signals } from "../kernel/events/Signals.js"
import { Mail } from "../kernel/mail/Mail.js"
import { Singletons } from "../kernel/sql/Singletons.js"
import { Organizations } from "../organizations/Organizations.js"
import { alertMail, unsubscribeUrl } from "./Mails.js"
import { makePreferences } from "./Preferences.js"
import { type AlertKey, type AlertRow, AlertsRepo } from "./Repo.js"
import { coalesceMillis, isAlertType } from "./Types.js"
import { makeUnsubscribeTokens } from "./UnsubscribeTokens.js"

/** Alerts read per round. */
const batch = 500
/** Waits after a failed send: 1 min, 5 min, 30 min, then every 2 h until the mail server takes it. */
const retryMillis = [60_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000]
/** The signals' channel that wakes the sender. */
const channel = "alerts"

export interface AlertSenderShape {
  /** Makes the sender look at the table now. */
  readonly wake: Effect.Effect<void>
}

export class AlertSender extends Context.Tag("svc/alerts/AlertSender")<AlertSender, AlertSenderShape>() {
  static readonly layer = Layer.scoped(
    AlertSender,
    Effect.gen(function*() {
      const repo = yield* AlertsRepo
      const mail = yield* Mail
      const organizations = yield* Organizations
      const accounts = yield* Accounts
      const preferences = yield* makePreferences
      const tokens = yield* makeUnsubscribeTokens
      const { baseUrl } = yield* AppConfig
      const bus = yield* DomainEvents
      const signals = yield* Signals

      /** The address of a member of the organization (none once they left it). */
      const emailOf = (organizationId: string, userId: string) =>
        Effect.gen(function*() {
          if (Option.isNone(yield* organizations.membership(organizationId, userId))) return Option.none<string>()
          return Option.map(yield* accounts.findUser(userId), (user) => user.email)
        })

      /** Mails (or drops, or postpones) every pending alert of one key. */
      const sendKey = (key: AlertKey, now: number) =>
        Effect.gen(function*() {
          const alerts = yield* repo.pendingOf(key)
          const ids = alerts.map((alert) => alert.id)
          const first = alerts[0]
          if (first === undefined) return
          if (!isAlertType(key.type)) return yield* repo.settle(ids, "dropped", now)
          const last = yield* repo.lastSent(key)
          if (last !== null && last + coalesceMillis > now) {
            return yield* repo.postpone(ids, last + coalesceMillis, first.attempt_count, first.last_error)
          }
          const email = yield* emailOf(key.organization_id, key.user_id)
          const wanted = Option.isSome(email) && (yield* preferences.wants(key.organization_id, key.user_id, key.type))
          if (!wanted || Option.isNone(email)) return yield* repo.settle(ids, "dropped", now)
          const token = yield* tokens.sign({
            organizationId: key.organization_id,
            userId: key.user_id,
            type: key.type
          })
          const sent = yield* Effect.either(
            mail.send(alertMail(email.value, key.type, alerts, unsubscribeUrl(baseUrl, token)))
          )
          if (sent._tag === "Right") return yield* repo.settle(ids, "sent", now)
          const attempts = first.attempt_count + 1
          const wait = retryMillis[Math.min(attempts, retryMillis.length) - 1]!
          yield* Effect.logWarning("alert e-mail not sent; will retry", sent.left.cause)
          yield* repo.postpone(ids, now + wait, attempts, String(sent.left.cause).slice(0, 1024))
        })

      const keyOf = (alert: AlertRow): AlertKey => ({
        organization_id: alert.organization_id,
        user_id: alert.user_id,
        type: alert.type,
        machine_id: alert.machine_id
      })

      /**
       * Sends what is due; answers when to look again (undefined: at a wake, nothing is pending). A
       * time, not a duration: sending takes time, and the sleep is measured from its start.
       */
      const round = Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const seen = new Set<string>()
        for (const alert of yield* repo.due(now, batch)) {
          const key = keyOf(alert)
          const text = JSON.stringify(key)
          if (seen.has(text)) continue
          seen.add(text)
          yield* sendKey(key, now)
        }
        const next = yield* repo.nextDue()
        return next === null ? undefined : next
      })

      /** The sender of the node that holds it. */
      const sending = Effect.scoped(Effect.gen(function*() {
        const wakes = yield* signals.subscribe(channel)
        return yield* Effect.forever(
          Effect.gen(function*() {
            const due = yield* round.pipe(
              Effect.catchAllCause((cause) =>
                Effect.zipRight(
                  Effect.logError("alert sender", cause),
                  Effect.map(Clock.currentTimeMillis, (now) => now + 1_000)
                )
              )
            )
            const now = yield* Clock.currentTimeMillis
            const sleep = due === undefined ? undefined : Math.max(due - now, 0)
            const woken = Effect.raceFirst(Queue.take(wakes), signals.poll)
            // A round that left due work (more than one batch) goes again at once. Nothing pending: only
            // a settle or billing's notice can make an alert, and it wakes the sender (on SQLite no idle timer; on PostgreSQL the poll).
            if (sleep === undefined) yield* woken
            else if (sleep > 0) yield* Effect.raceFirst(woken, Effect.sleep(Duration.millis(sleep)))
            yield* Queue.takeAll(wakes)
          })
        )
      }))

      // Every node: an event wakes the sender once its transaction wrote alerts (the recorder's mark).
      const marks = yield* OutboxMarks
      const events = yield* bus.subscribe(
        marks.whenMarked(
          "alerts",
          (event) =>
            (event._tag === "OperationSettled" && (event.type === "operation.failed" || event.kind === "stop")) ||
            event._tag === "BillingNotice"
        )
      )
      yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Queue.take(events), signals.notify(channel))))
      yield* Effect.forkScoped((yield* Singletons).run("alert sender", sending))
      return { wake: signals.notify(channel) }
    })
  )
}
