/**
 * Reading conversations: finding one on its machine, listing a machine's, and reading a
 * conversation's events after a cursor (at once, or waiting for the next one: a long poll).
 */
import { Duration, Effect, Option } from "effect"
import { mapPage, paginate } from "../kernel/http/Pagination.js"
import { Machines } from "../machines/Machines.js"
import { AgentConversationsRepo, type ConversationRow, type TurnRow } from "./ConversationsRepo.js"
import { ConversationNotFound } from "./Errors.js"
import type { EventLog } from "./EventLog.js"
import type { AgentEvent } from "./providers/Schemas.js"

/** What one read of a conversation's events found. */
export interface EventsRead {
  readonly conversationId: string
  /** Whether a turn of the conversation runs (more events will come). */
  readonly active: boolean
  /** The last event's seq, or the cursor asked for when there was none. */
  readonly cursor: number
  readonly events: ReadonlyArray<AgentEvent>
  readonly latestTurn: TurnRow | null
}

/** A conversation with its latest turn, as lists show it. */
export interface ConversationEntry {
  readonly conversation: ConversationRow
  readonly latestTurn: TurnRow | null
}

export const makeConversations = (log: EventLog) =>
  Effect.gen(function*() {
    const repo = yield* AgentConversationsRepo
    const findMachine = (yield* Machines).find

    /** The machine's conversation (ids in any case); `conversation_not_found` when it has none. */
    const find = (machineId: string, conversationId: string) =>
      Effect.flatMap(repo.findConversation(machineId, conversationId.toLowerCase()), (found) =>
        Option.match(found, {
          onNone: () => Effect.fail(new ConversationNotFound({ detail: "Conversation not found" })),
          onSome: Effect.succeed
        }))

    return {
      find,

      /** A turn that exists (one an idempotency record names). */
      turn: (turnId: string) =>
        Effect.map(
          repo.findTurn(turnId),
          (found) => Option.getOrThrowWith(found, () => new Error(`turn ${turnId} gone`))
        ),

      /** The conversation, checked against the organization's machine. */
      findIn: (organizationId: string, machineId: string, conversationId: string) =>
        Effect.flatMap(findMachine(organizationId, machineId), (machine) => find(machine.id, conversationId)),

      /** Events after `cursor`; with `waitSeconds`, waits (by the Clock) for one when none is there. */
      events: (
        organizationId: string,
        machineId: string,
        conversationId: string,
        cursor: number,
        waitSeconds: number
      ) =>
        Effect.gen(function*() {
          const machine = yield* findMachine(organizationId, machineId)
          const conversation = yield* find(machine.id, conversationId)
          const read = log.read(conversation.id, cursor)
          let found = yield* read
          if (found.length === 0 && waitSeconds > 0) {
            found = yield* Effect.scoped(Effect.gen(function*() {
              const watch = yield* log.watch(conversation.id)
              yield* watch.next
              const now = yield* read
              if (now.length > 0) return now
              yield* Effect.timeout(watch.next, Duration.seconds(waitSeconds)).pipe(Effect.option)
              return yield* read
            }))
          }
          const fresh = yield* find(machine.id, conversation.id)
          const latest = fresh.latest_turn_id === null ? Option.none() : yield* repo.findTurn(fresh.latest_turn_id)
          return {
            conversationId: conversation.id,
            active: fresh.status === "running",
            cursor: found.length === 0 ? cursor : found[found.length - 1]!.seq,
            events: found,
            latestTurn: Option.getOrNull(latest)
          } satisfies EventsRead
        }),

      /** Persisted events after `cursor`, and whether a turn of the conversation is open. */
      readAfter: (conversationId: string, cursor: number) =>
        Effect.gen(function*() {
          const events = yield* log.read(conversationId, cursor)
          const open = yield* repo.openTurn(conversationId)
          return { events, active: Option.isSome(open) }
        }),

      /** The machine's conversations, oldest first, `limit` a page after the conversation `after`. */
      page: (organizationId: string, machineId: string, limit: number, after: string | null) =>
        Effect.gen(function*() {
          const machine = yield* findMachine(organizationId, machineId)
          const page = yield* paginate(
            limit,
            (limitPlusOne) =>
              repo.pageConversations(machine.id, { limit: limitPlusOne, after: after?.toLowerCase() ?? null }),
            (row) => row.id
          )
          const turns = yield* repo.turnsByIds(
            page.items.flatMap((row) => row.latest_turn_id === null ? [] : [row.latest_turn_id])
          )
          const byId = new Map(turns.map((turn) => [turn.id, turn]))
          return mapPage(page, (conversation): ConversationEntry => ({
            conversation,
            latestTurn: conversation.latest_turn_id === null ? null : byId.get(conversation.latest_turn_id) ?? null
          }))
        })
    }
  })

export type Conversations = Effect.Effect.Success<ReturnType<typeof makeConversations>>
