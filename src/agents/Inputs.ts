/**
 * Steer and interrupt: inputs to the turn of a conversation that runs in this process. Each is
 * recorded (with its idempotency key) before it is handed to the turn runner.
 */
import { Clock, Deferred, Duration, Effect, Option, Queue } from "effect"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { requireRunning } from "../kernel/http/MachineErrors.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import type { Requester } from "../kernel/sql/Idempotency.js"
import { Machines } from "../machines/Machines.js"
import type { Conversations } from "./Conversations.js"
import { AgentConversationsRepo } from "./ConversationsRepo.js"
import { NoActiveTurn } from "./Errors.js"
import { fingerprintOf, type TurnKeys } from "./TurnKeys.js"
import type { Turns } from "./Turns.js"

/** What an accepted input answers. */
export interface AcceptedInput {
  readonly conversationId: string
  readonly turnId: string
  readonly inputId: string
  readonly kind: "steer" | "interrupt"
  /** For a forced interrupt: the turn had ended when it was answered. */
  readonly stopped: boolean
}

export interface SteerRequest {
  readonly conversation_id: string
  readonly text: string
}

export interface InterruptRequest {
  readonly conversation_id: string
  readonly force: boolean
}

export interface InputParts {
  readonly turns: Turns
  readonly conversations: Conversations
  readonly keys: TurnKeys
}

export const makeInputs = ({ conversations, keys, turns }: InputParts) =>
  Effect.gen(function*() {
    const commit = yield* GroupCommit
    const repo = yield* AgentConversationsRepo
    const machines = yield* Machines

    /** The conversation's turn that runs now, with its handle; `no_active_turn` when none does. */
    const runningTurn = (requester: Requester, machineId: string, conversationId: string) =>
      Effect.gen(function*() {
        const machine = yield* Effect.flatMap(machines.find(requester.organizationId, machineId), requireRunning)
        const conversation = yield* conversations.find(machine.id, conversationId)
        const open = yield* repo.openTurn(conversation.id)
        const handle = Option.isSome(open) ? turns.handleOf(open.value.id) : undefined
        if (Option.isNone(open) || handle === undefined) {
          return yield* new NoActiveTurn({ detail: "No turn of this conversation is running" })
        }
        return { conversation, handle, turn: open.value }
      })

    /** The answer an input gave first, when its idempotency key was used already. */
    const replayed = (requester: Requester, fingerprint: string, kind: AcceptedInput["kind"]) =>
      Effect.gen(function*() {
        const again = yield* keys.check(requester, fingerprint)
        if (Option.isNone(again)) return Option.none<AcceptedInput>()
        const turn = yield* conversations.turn(again.value.turnId)
        return Option.some<AcceptedInput>({
          conversationId: turn.conversation_id,
          turnId: turn.id,
          inputId: again.value.inputId!,
          kind,
          stopped: turn.finished_at !== null
        })
      })

    return {
      /** Hands text to the running turn: live to an agent that takes it, else run right after. */
      steer: (requester: Requester, machineId: string, body: SteerRequest) =>
        Effect.gen(function*() {
          const fingerprint = fingerprintOf("steer", machineId, body)
          const again = yield* replayed(requester, fingerprint, "steer")
          if (Option.isSome(again)) return again.value
          const { conversation, handle, turn } = yield* runningTurn(requester, machineId, body.conversation_id)
          const inputId = yield* handle.lock.withPermits(1)(Effect.gen(function*() {
            if (!handle.open) return yield* new NoActiveTurn({ detail: "The turn is finishing" })
            const now = yield* Clock.currentTimeMillis
            const id = uuidv7(now)
            yield* commit.transaction(Effect.zipRight(
              repo.insertInput({
                id,
                turn_id: turn.id,
                kind: "steer",
                text: body.text,
                force: 0,
                created_at: now,
                accepted_at: null
              }),
              keys.record(requester, fingerprint, turn.id, id, now)
            ))
            yield* Queue.offer(handle.inbox, { inputId: id, text: body.text })
            return id
          }))
          return {
            conversationId: conversation.id,
            turnId: turn.id,
            inputId,
            kind: "steer",
            stopped: false
          } satisfies AcceptedInput
        }),

      /** Stops the running turn (escalating signals: providers/Interrupt.ts), or kills it with `force`. */
      interrupt: (requester: Requester, machineId: string, body: InterruptRequest) =>
        Effect.gen(function*() {
          const fingerprint = fingerprintOf("interrupt", machineId, body)
          const again = yield* replayed(requester, fingerprint, "interrupt")
          if (Option.isSome(again)) return again.value
          const { conversation, handle, turn } = yield* runningTurn(requester, machineId, body.conversation_id)
          const now = yield* Clock.currentTimeMillis
          const inputId = uuidv7(now)
          yield* commit.transaction(Effect.gen(function*() {
            yield* repo.insertInput({
              id: inputId,
              turn_id: turn.id,
              kind: "interrupt",
              text: null,
              force: body.force ? 1 : 0,
              created_at: now,
              accepted_at: now
            })
            yield* repo.updateTurn(turn.id, { interrupt_requested: 1 })
            yield* keys.record(requester, fingerprint, turn.id, inputId, now)
          }))
          yield* Deferred.succeed(handle.stop, body.force)
          // A forced stop kills at once: answer once the turn has ended (bounded, in case the host is slow).
          const stopped = body.force
            ? Option.isSome(
              yield* Effect.timeout(Deferred.await(handle.done), Duration.seconds(10)).pipe(Effect.option)
            )
            : false
          return {
            conversationId: conversation.id,
            turnId: turn.id,
            inputId,
            kind: "interrupt",
            stopped
          } satisfies AcceptedInput
        })
    }
  })
