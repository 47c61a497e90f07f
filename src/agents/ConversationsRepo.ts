/** Agent conversations, their turns and the inputs sent to running turns (their idempotency records: IdempotencyKeysRepo). */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"

export type TurnStatus = "starting" | "running" | "completed" | "failed" | "interrupted"
export const openTurnStatuses: ReadonlyArray<TurnStatus> = ["starting", "running"]

export interface ConversationRow {
  readonly id: string
  readonly organization_id: string
  readonly machine_id: string
  readonly provider: string
  readonly session_id: string | null
  readonly usage_totals: string | null
  readonly status: "idle" | "running"
  readonly turn_count: number
  readonly latest_turn_id: string | null
  readonly created_at: number
  readonly updated_at: number
}

export interface TurnRow {
  readonly id: string
  readonly conversation_id: string
  readonly organization_id: string
  readonly machine_id: string
  readonly status: TurnStatus
  readonly provider: string
  readonly model: string
  readonly reasoning_effort: string | null
  readonly resume: number
  readonly interrupt_requested: number
  readonly error_code: string | null
  readonly exit_code: number | null
  readonly created_at: number
  readonly started_at: number | null
  readonly finished_at: number | null
}

export interface InputRow {
  readonly id: string
  readonly turn_id: string
  readonly kind: "steer" | "interrupt"
  readonly text: string | null
  readonly force: number
  readonly created_at: number
  readonly accepted_at: number | null
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const one = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])
  return {
    insertConversation: (row: ConversationRow) =>
      Effect.orDie(sql`INSERT INTO agent_conversations ${sql.insert(row as any)}`),
    updateConversation: (id: string, patch: Partial<ConversationRow>) =>
      Effect.orDie(sql`UPDATE agent_conversations SET ${sql.update(patch as any)} WHERE id = ${id}`),
    findConversation: (machineId: string, id: string) =>
      sql<ConversationRow>`SELECT * FROM agent_conversations WHERE id = ${id} AND machine_id = ${machineId}`.pipe(
        Effect.map(one),
        Effect.orDie
      ),
    /** Oldest first; `after` is the id of the last conversation of the previous page. */
    pageConversations: (machineId: string, options: { limit: number; after: string | null }) =>
      sql<ConversationRow>`SELECT * FROM agent_conversations WHERE machine_id = ${machineId}
        ${options.after === null ? sql`` : sql`AND id > ${options.after}`}
        ORDER BY id LIMIT ${options.limit}`.pipe(Effect.orDie),
    insertTurn: (row: TurnRow) => Effect.orDie(sql`INSERT INTO agent_turns ${sql.insert(row as any)}`),
    updateTurn: (id: string, patch: Partial<TurnRow>) =>
      Effect.orDie(sql`UPDATE agent_turns SET ${sql.update(patch as any)} WHERE id = ${id}`),
    findTurn: (id: string) =>
      sql<TurnRow>`SELECT * FROM agent_turns WHERE id = ${id}`.pipe(Effect.map(one), Effect.orDie),
    turnsByIds: (ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed([] as ReadonlyArray<TurnRow>)
        : sql<TurnRow>`SELECT * FROM agent_turns WHERE ${sql.in("id", ids)}`.pipe(Effect.orDie),
    /** The conversation's turn that is starting or running, if any. */
    openTurn: (conversationId: string) =>
      sql<TurnRow>`SELECT * FROM agent_turns WHERE conversation_id = ${conversationId}
        AND status IN ('starting', 'running') ORDER BY created_at DESC LIMIT 1`.pipe(Effect.map(one), Effect.orDie),
    /** Turns left open by a process that stopped (their agents ended with it). */
    openTurns: sql<TurnRow>`SELECT * FROM agent_turns WHERE status IN ('starting', 'running')`.pipe(Effect.orDie),
    insertInput: (row: InputRow) => Effect.orDie(sql`INSERT INTO agent_inputs ${sql.insert(row as any)}`),
    acceptInput: (id: string, now: number) =>
      Effect.orDie(sql`UPDATE agent_inputs SET accepted_at = ${now} WHERE id = ${id} AND accepted_at IS NULL`),
    findInput: (id: string) =>
      sql<InputRow>`SELECT * FROM agent_inputs WHERE id = ${id}`.pipe(Effect.map(one), Effect.orDie)
  }
})

export class AgentConversationsRepo extends Context.Tag("svc/agents/AgentConversationsRepo")<
  AgentConversationsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(AgentConversationsRepo, make)
}
