/**
 * Agent events, numbered per conversation from 1 (`seq`). The next number is taken in the insert
 * itself, so the turn runner and the steer route can append to one conversation at once.
 */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { makeRowLocks } from "../kernel/sql/RowLocks.js"

export interface AgentEventRow {
  readonly conversation_id: string
  readonly seq: number
  readonly turn_id: string | null
  readonly type: string
  /** The AgentEvent as JSON, without `seq` (added when read). */
  readonly data: string
  readonly created_at: number
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const locks = yield* makeRowLocks
  return {
    /**
     * Appends one event and answers its seq. On PostgreSQL the conversation's row is locked until
     * the append commits: two nodes never take one number, and numbers commit in order, so a reader
     * past `seq` never misses a lower one committed later.
     */
    append: (conversationId: string, turnId: string | null, type: string, data: unknown, now: number) => {
      const insert = sql<
        { seq: number }
      >`INSERT INTO agent_events (conversation_id, seq, turn_id, type, data, created_at)
        SELECT ${conversationId}, COALESCE(MAX(seq), 0) + 1, ${turnId}, ${type}, ${JSON.stringify(data)}, ${now}
        FROM agent_events WHERE conversation_id = ${conversationId} RETURNING seq`.pipe(
        Effect.map((rows) => Number(rows[0]!.seq)),
        Effect.orDie
      )
      return locks.shared
        ? Effect.orDie(sql.withTransaction(Effect.zipRight(locks.row("agent_conversations", conversationId), insert)))
        : insert
    },
    after: (conversationId: string, cursor: number, limit: number) =>
      sql<AgentEventRow>`SELECT * FROM agent_events WHERE conversation_id = ${conversationId} AND seq > ${cursor}
        ORDER BY seq LIMIT ${limit}`.pipe(Effect.orDie),
    last: (conversationId: string) =>
      sql<{ seq: number | null }>`SELECT MAX(seq) AS seq FROM agent_events WHERE conversation_id = ${conversationId}`
        .pipe(Effect.map((rows) => Number(rows[0]?.seq ?? 0)), Effect.orDie)
  }
})

export class AgentEventsRepo extends Context.Tag("svc/agents/AgentEventsRepo")<
  AgentEventsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(AgentEventsRepo, make)
}
