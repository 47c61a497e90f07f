/**
 * Accepting a prompt. The turn, its conversation, `turn_started` and the idempotency record are
 * committed before anything is answered; then the turn is launched in its machine (Turns.ts).
 */
import { Clock, Effect, Option } from "effect"
import { MachineDriver } from "../drivers/MachineDriver.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { BodyTooLarge, InvalidRequest } from "../kernel/http/Errors.js"
import { requireRunning, RuntimeUnavailable } from "../kernel/http/MachineErrors.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import type { Requester } from "../kernel/sql/Idempotency.js"
import { Machines } from "../machines/Machines.js"
import { type Attachment, attachmentBytes } from "./Attachments.js"
import type { Availability } from "./Availability.js"
import { maxAttachmentBytes } from "./Bounds.js"
import type { Conversations } from "./Conversations.js"
import { AgentConversationsRepo, type ConversationRow, type TurnRow } from "./ConversationsRepo.js"
import { AgentsUnavailable, AgentTurnRunning, ProviderMismatch } from "./Errors.js"
import type { EventLog } from "./EventLog.js"
import type { AgentProvider, ReasoningEffort } from "./providers/Schemas.js"
import { fingerprintOf, type TurnKeys } from "./TurnKeys.js"
import type { Turns } from "./Turns.js"

/** A prompt as the service takes it (the API's decoded `AgentPromptRequest`). */
export interface PromptRequest {
  readonly attachments: ReadonlyArray<Attachment>
  /** Null starts a new conversation. */
  readonly conversation_id: string | null
  /** Null: the provider's default model. */
  readonly model: string | null
  /** Needed for a new conversation; an existing one keeps its own. */
  readonly provider: AgentProvider | null
  readonly reasoning_effort: ReasoningEffort | null
  readonly text: string
}

export interface PromptParts {
  readonly log: EventLog
  readonly turns: Turns
  readonly conversations: Conversations
  readonly availability: Availability
  readonly keys: TurnKeys
}

export const makePrompts = ({ availability, conversations, keys, log, turns }: PromptParts) =>
  Effect.gen(function*() {
    const commit = yield* GroupCommit
    const repo = yield* AgentConversationsRepo
    const driver = yield* MachineDriver
    const machines = yield* Machines

    /** Accepts a prompt and launches its turn; answers the turn (the first one, for a repeated key). */
    return (requester: Requester, machineId: string, body: PromptRequest) =>
      Effect.gen(function*() {
        const fingerprint = fingerprintOf("prompt", machineId, body)
        const again = yield* keys.check(requester, fingerprint)
        if (Option.isSome(again)) return yield* conversations.turn(again.value.turnId)
        if (body.text === "" && body.attachments.length === 0) {
          return yield* new InvalidRequest({
            detail: "A prompt needs text or an attachment",
            field_errors: [{ field: "text", message: "give text or at least one attachment" }]
          })
        }
        if (attachmentBytes(body.attachments) > maxAttachmentBytes) {
          return yield* new BodyTooLarge({ detail: "The attachments hold more than 16 MiB together" })
        }
        if (driver.unavailable !== undefined) {
          return yield* new RuntimeUnavailable({
            detail: `Machines cannot run on this server now: ${driver.unavailable}`
          })
        }
        const machine = yield* Effect.flatMap(machines.find(requester.organizationId, machineId), requireRunning)
        const existing = body.conversation_id === null
          ? undefined
          : yield* conversations.find(machine.id, body.conversation_id)
        if (existing === undefined && body.provider === null) {
          return yield* new InvalidRequest({
            detail: "A new conversation needs a provider",
            field_errors: [{ field: "provider", message: "required for a new conversation" }]
          })
        }
        if (existing !== undefined && body.provider !== null && body.provider !== existing.provider) {
          return yield* new ProviderMismatch({ detail: `The conversation belongs to ${existing.provider}` })
        }
        const providerKey = existing?.provider ?? body.provider!
        const unavailable = availability.unavailable(providerKey)
        if (unavailable !== undefined) return yield* new AgentsUnavailable({ detail: unavailable })
        const provider = availability.providerOf(providerKey)!
        const now = yield* Clock.currentTimeMillis
        const turn: TurnRow = {
          id: uuidv7(now),
          conversation_id: existing?.id ?? uuidv7(now),
          organization_id: requester.organizationId,
          machine_id: machine.id,
          status: "starting",
          provider: provider.key,
          model: body.model ?? provider.defaultModel,
          reasoning_effort: body.reasoning_effort,
          resume: existing === undefined ? 0 : 1,
          interrupt_requested: 0,
          error_code: null,
          exit_code: null,
          created_at: now,
          started_at: null,
          finished_at: null
        }
        const accepted = yield* commit.transaction(Effect.gen(function*() {
          // Again inside the transaction: a concurrent request with the same key or conversation.
          const raced = yield* keys.check(requester, fingerprint)
          if (Option.isSome(raced)) return Option.some(raced.value.turnId)
          if (existing === undefined) {
            const conversation: ConversationRow = {
              id: turn.conversation_id,
              organization_id: requester.organizationId,
              machine_id: machine.id,
              provider: provider.key,
              session_id: null,
              usage_totals: null,
              status: "running",
              turn_count: 1,
              latest_turn_id: turn.id,
              created_at: now,
              updated_at: now
            }
            yield* repo.insertConversation(conversation)
          } else {
            if (Option.isSome(yield* repo.openTurn(existing.id))) {
              return yield* new AgentTurnRunning({ detail: "A turn of this conversation is running" })
            }
            yield* repo.updateConversation(existing.id, {
              status: "running",
              turn_count: existing.turn_count + 1,
              latest_turn_id: turn.id,
              updated_at: now
            })
          }
          yield* repo.insertTurn(turn)
          yield* keys.record(requester, fingerprint, turn.id, null, now)
          yield* log.append(turn.conversation_id, turn.id, {
            type: "turn_started",
            kind: "prompt",
            provider: provider.key,
            model: turn.model,
            reasoning_effort: turn.reasoning_effort,
            resumed: existing !== undefined,
            session_id: existing?.session_id ?? null,
            text: body.text
          })
          return Option.none<string>()
        }))
        if (Option.isSome(accepted)) return yield* conversations.turn(accepted.value)
        yield* log.wake(turn.conversation_id)
        yield* turns.launch(turn, provider, body, existing?.session_id ?? null, existing?.usage_totals ?? null)
        return turn
      })
  })
