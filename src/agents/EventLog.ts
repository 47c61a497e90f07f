/**
 * A conversation's event log: events are numbered and stored, then the conversation's readers are
 * woken (src/kernel/events/Wakeups.ts). Readers always read the database, so none misses an event.
 */
import { Clock, Effect } from "effect"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { makeWakeups } from "../kernel/events/Wakeups.js"
import { iso } from "../kernel/http/Dto.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { type AgentEventRow, AgentEventsRepo } from "./EventsRepo.js"
import type { EventBody } from "./providers/AgentProvider.js"
import type { AgentEvent } from "./providers/Schemas.js"

/** The most events one read answers; a shorter read has reached the end. */
export const eventsPage = 500

const eventOf = (row: AgentEventRow): AgentEvent => ({ ...JSON.parse(row.data), seq: row.seq })

export const makeEventLog = Effect.gen(function*() {
  const commit = yield* GroupCommit
  const events = yield* AgentEventsRepo
  const wakeups = makeWakeups<string>()

  /** Appends an event (inside the caller's transaction, if any); readers are woken by `wake`. */
  const append = (conversationId: string, turnId: string | null, body: EventBody) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      events.append(conversationId, turnId, body.type, {
        ...body,
        id: uuidv7(now),
        turn_id: turnId,
        created_at: iso(now)
      }, now))

  return {
    append,
    wake: wakeups.wake,
    /** Appends an event in a transaction of its own, then wakes the readers. */
    emit: (conversationId: string, turnId: string | null, body: EventBody) =>
      Effect.zipRight(commit.transaction(append(conversationId, turnId, body)), wakeups.wake(conversationId)),
    /** At most `eventsPage` events after `cursor`, oldest first. */
    read: (conversationId: string, cursor: number) =>
      Effect.map(events.after(conversationId, cursor, eventsPage), (rows) => rows.map(eventOf)),
    watch: wakeups.watch,
    listen: wakeups.listen
  }
})

export type EventLog = Effect.Effect.Success<typeof makeEventLog>
