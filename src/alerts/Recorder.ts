/**
 * The alerts' outbox recorder (src/kernel/events/EventRecorders.ts): inside the transaction that
 * settles an operation, one alert row per member who should hear of it (extensions §19), so a crash
 * loses none. The sender (Worker.ts) mails them, coalesced.
 * - operation_failed: the member who asked for the operation;
 * - machine_stop_failed: the machine's creator, when a stop failed (the requester of that stop, if
 *   someone else, still gets operation_failed);
 * - auto_stop: the creator, when a stop for `auto_stop` or `idle_sleep` succeeded;
 * - abuse_stop: the creator and the organization's owners, when the abuse guard stopped it;
 * - billing_exhausted, trial_ending: owners and billing members, from billing's notices (written in
 *   the transaction that exhausted the balance or found the trial 3 days from its end).
 */
import { Effect, Option } from "effect"
import type { Role } from "../kernel/domain/Access.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import type { DomainEvent } from "../kernel/events/DomainEvents.js"
import { eachEvent } from "../kernel/events/EventRecorders.js"
import { OutboxMarks } from "../kernel/events/OutboxMarks.js"
import { Organizations } from "../organizations/Organizations.js"
import { EngineReads, type MachineRow, type OperationRow } from "../runtime/EngineReads.js"
import { makePreferences } from "./Preferences.js"
import { AlertsRepo } from "./Repo.js"
import { type AlertType, billingRoles, organizationRoles } from "./Types.js"

interface Cause {
  readonly type: AlertType
  readonly to: ReadonlyArray<string>
  readonly summary: string
}

const reasonWords: Record<string, string> = { auto_stop: "auto-stop timer", idle_sleep: "idle-sleep timer" }

/** The reasons of a succeeded stop that someone is told of (see `causesOf`). */
const alertingStops = new Set([...Object.keys(reasonWords), "abuse"])

/** Who hears of a settled operation, and what they are told. */
const causesOf = (operation: OperationRow, machine: MachineRow, owners: ReadonlyArray<string>): Array<Cause> => {
  const name = `"${machine.name}"`
  const causes: Array<Cause> = []
  const stop = operation.kind === "stop"
  // A cancel (asked for, or a forced stop or a delete cancelling what was queued) is a decision, not news.
  if (operation.status === "failed" && operation.error_code !== "cancelled") {
    const why = operation.error_code ?? "failed"
    if (stop) {
      causes.push({
        type: "machine_stop_failed",
        to: [machine.created_by],
        summary: `Stopping machine ${name} failed (${why}); operation ${operation.id}.`
      })
    }
    if (operation.requested_by !== null && !(stop && operation.requested_by === machine.created_by)) {
      causes.push({
        type: "operation_failed",
        to: [operation.requested_by],
        summary: `Operation ${operation.kind} on machine ${name} failed (${why}); operation ${operation.id}.`
      })
    }
  } else if (operation.status === "succeeded" && stop) {
    const reason = operation.stop_reason ?? "api"
    if (reason in reasonWords) {
      causes.push({
        type: "auto_stop",
        to: [machine.created_by],
        summary: `Machine ${name} was stopped by its ${reasonWords[reason]}.`
      })
    }
    if (reason === "abuse") {
      causes.push({
        type: "abuse_stop",
        to: [...new Set([machine.created_by, ...owners])],
        summary: `Machine ${name} was stopped by the abuse guard.`
      })
    }
  }
  return causes
}

type BillingNotice = Extract<DomainEvent, { _tag: "BillingNotice" }>

/** What owners and billing members are told of their organization's money. */
const billingCause = (notice: BillingNotice, to: ReadonlyArray<string>): Cause =>
  notice.type === "billing.exhausted"
    ? {
      type: "billing_exhausted",
      to,
      summary: "The organization's balance ran out: its running machines are being stopped, and machines cannot " +
        "start until a payment or a grant adds to it."
    }
    : {
      type: "trial_ending",
      to,
      summary: `The organization's trial ends at ${new Date(notice.at).toISOString()}; what is left of it is ` +
        "forfeited then. Choose a plan or buy credit to keep machines running."
    }

export const makeRecorder = Effect.gen(function*() {
  const repo = yield* AlertsRepo
  const { machines, operations } = yield* EngineReads
  const organizations = yield* Organizations
  const preferences = yield* makePreferences
  const marks = yield* OutboxMarks

  const membersWith = (organizationId: string, roles: ReadonlyArray<Role>) =>
    Effect.map(
      organizations.members(organizationId),
      (members) => members.filter((m) => roles.includes(m.role)).map((m) => m.user_id)
    )

  /** One pending alert per recipient who is still a member and wants the type now. */
  const write = (
    organizationId: string,
    cause: Cause,
    about: { readonly machineId: string; readonly operationId: string | null },
    now: number
  ) =>
    Effect.gen(function*() {
      if (!preferences.available(cause.type)) return
      for (const userId of cause.to) {
        // A member who left, or who turned the type off, is not written to.
        if (Option.isNone(yield* organizations.membership(organizationId, userId))) continue
        if (!(yield* preferences.wants(organizationId, userId, cause.type))) continue
        yield* repo.insert({
          id: uuidv7(now),
          organization_id: organizationId,
          user_id: userId,
          type: cause.type,
          machine_id: about.machineId,
          operation_id: about.operationId,
          summary: cause.summary,
          status: "pending",
          attempt_count: 0,
          created_at: now,
          next_attempt_at: now,
          sent_at: null,
          last_error: null
        })
        marks.mark("alerts")
      }
    })

  const recordOne = (event: DomainEvent, now: number) =>
    Effect.gen(function*() {
      if (event._tag === "BillingNotice") {
        const to = yield* membersWith(event.organizationId, billingRoles)
        // The organization's own news: no machine (coalesced per organization, type and member).
        return yield* write(event.organizationId, billingCause(event, to), { machineId: "", operationId: null }, now)
      }
      // Only failures and stops for a timer or the abuse guard concern an alert: a succeeded exec,
      // or a stop asked for through the API, costs no read.
      if (event._tag !== "OperationSettled") return
      if (
        event.type === "operation.succeeded" && !(event.kind === "stop" && alertingStops.has(event.stopReason ?? "api"))
      ) {
        return
      }
      const operation = yield* operations.find(event.operationId)
      const machine = yield* machines.find(event.machineId)
      if (Option.isNone(operation) || Option.isNone(machine)) return
      const abuse = operation.value.stop_reason === "abuse" && operation.value.status === "succeeded"
      const owners = abuse ? yield* membersWith(event.organizationId, organizationRoles) : []
      for (const cause of causesOf(operation.value, machine.value, owners)) {
        yield* write(event.organizationId, cause, event, now)
      }
    })

  return eachEvent(recordOne)
})
