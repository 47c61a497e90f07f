/**
 * Running turns. A committed turn is launched in its machine (attachments written, the agent found,
 * then the turn runner forked into this service's scope, so a server shutdown ends every agent) and
 * finished in one transaction. Turns left open by an earlier process are failed when this is built.
 */
import { Clock, Deferred, Effect, Option, Queue } from "effect"
import { guestArgv } from "../drivers/Guest.js"
import { MachineDriver } from "../drivers/MachineDriver.js"
import { type DomainEvent, DomainEvents } from "../kernel/events/DomainEvents.js"
import { EventRecorders } from "../kernel/events/EventRecorders.js"
import { GuestActionFailed } from "../kernel/http/MachineErrors.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { HostLease } from "../kernel/sql/HostLease.js"
import { EngineReads } from "../runtime/EngineReads.js"
import { type Attachment, promptText, writeAttachments } from "./Attachments.js"
import { AgentConversationsRepo, type TurnRow } from "./ConversationsRepo.js"
import type { EventLog } from "./EventLog.js"
import type { AgentProviderShape } from "./providers/AgentProvider.js"
import type { ReasoningEffort } from "./providers/Schemas.js"
import { runTurn, type Steer, sweep, type TurnOutcome } from "./providers/TurnRunner.js"
import { usageMeter } from "./Usage.js"

/** A running turn's live parts: its inbox, its stop signal and whether it still takes steers. */
export interface TurnHandle {
  readonly inbox: Queue.Queue<Steer>
  readonly stop: Deferred.Deferred<boolean>
  readonly done: Deferred.Deferred<void>
  readonly lock: Effect.Semaphore
  open: boolean
}

/** What the agent is given for the turn's first run. */
export interface TurnInput {
  readonly text: string
  readonly attachments: ReadonlyArray<Attachment>
}

/**
 * `log`: the conversations' event log; `finishedEvent`: a finished turn's row as its
 * `agent.turn_finished` event (its `data` the AgentTurnDto, built where DTOs are: Agents.ts).
 */
export const makeTurns = (log: EventLog, finishedEvent: (row: TurnRow) => DomainEvent) =>
  Effect.gen(function*() {
    const commit = yield* GroupCommit
    const outbox = yield* EventRecorders
    const bus = yield* DomainEvents
    const repo = yield* AgentConversationsRepo
    const driver = yield* MachineDriver
    const engine = yield* EngineReads
    const lease = yield* HostLease
    const scope = yield* Effect.scope
    const handles = new Map<string, TurnHandle>()

    /**
     * Ends a turn: `turn_finished`, the turn and conversation rows and `idle`, and the outbox of its
     * `agent.turn_finished` (webhooks), in one transaction; the bus hears of it once it is on disk.
     */
    const finish = (turn: TurnRow, result: TurnOutcome, message?: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const finished = yield* commit.transaction(Effect.gen(function*() {
          yield* log.append(turn.conversation_id, turn.id, {
            type: "turn_finished",
            outcome: result.outcome,
            ...(result.errorCode === null ? {} : { code: result.errorCode }),
            ...(message === undefined ? {} : { message }),
            ...(result.exitCode === null ? {} : { result: String(result.exitCode) }),
            time_ms: Math.max(0, now - (turn.started_at ?? turn.created_at))
          })
          yield* repo.updateTurn(turn.id, {
            status: result.outcome,
            exit_code: result.exitCode,
            error_code: result.errorCode,
            finished_at: now
          })
          yield* repo.updateConversation(turn.conversation_id, { status: "idle", updated_at: now })
          yield* log.append(turn.conversation_id, null, { type: "idle" })
          const events = Option.toArray(Option.map(yield* repo.findTurn(turn.id), finishedEvent))
          yield* outbox.record(events)
          return events
        }))
        yield* log.wake(turn.conversation_id)
        yield* Effect.forEach(finished, bus.deliver, { discard: true })
      })

    // Turns left open by an earlier process. A graceful stop ended their agents; after a crash they
    // may still run in machines that outlived it, so they are killed first. Only this host's: another
    // host's turns run in its own node.
    for (const turn of yield* repo.openTurns) {
      const machine = yield* engine.machines.find(turn.machine_id)
      if (Option.isSome(machine) && machine.value.host_id !== lease.hostId) continue
      yield* sweep(driver, turn.machine_id, turn.id, "KILL")
      yield* finish(
        turn,
        { outcome: "failed", exitCode: null, errorCode: "server_restarted" },
        "svc restarted while the turn ran"
      )
    }

    /**
     * Makes the turn start in the machine: attachments written and the agent found. A failure is
     * the machine's (502 `guest_action_failed`) and fails the turn.
     */
    const launch = (
      turn: TurnRow,
      provider: AgentProviderShape,
      input: TurnInput,
      sessionId: string | null,
      usageTotals: string | null
    ) =>
      Effect.gen(function*() {
        const usageOf = usageMeter(
          provider,
          turn.model,
          usageTotals,
          (totals) => repo.updateConversation(turn.conversation_id, { usage_totals: totals })
        )
        const tools = driver.toolsPath!
        const failure = (detail: string) =>
          Effect.zipRight(
            finish(turn, { outcome: "failed", exitCode: null, errorCode: "guest_action_failed" }, detail),
            Effect.fail(new GuestActionFailed({ detail }))
          )
        const written = yield* writeAttachments(driver, turn.machine_id, turn.id, input.attachments)
        if (written._tag === "failed") {
          return yield* failure(`could not write the attachment ${written.name} into the machine`)
        }
        const check = yield* Effect.either(driver.exec(turn.machine_id, {
          argv: guestArgv("executable", `${tools}/${provider.bin}`)
        }, () => Effect.void))
        if (check._tag === "Left" || check.right.exitCode !== 0) {
          return yield* failure(
            `the ${provider.key} agent cannot be run in this machine (booted before it was installed?)`
          )
        }
        const handle: TurnHandle = {
          inbox: yield* Queue.unbounded<Steer>(),
          stop: yield* Deferred.make<boolean>(),
          done: yield* Deferred.make<void>(),
          lock: yield* Effect.makeSemaphore(1),
          open: true
        }
        handles.set(turn.id, handle)
        const now = yield* Clock.currentTimeMillis
        yield* repo.updateTurn(turn.id, { status: "running", started_at: now })
        return yield* runTurn(
          {
            driver,
            provider,
            machineId: turn.machine_id,
            turnId: turn.id,
            tools,
            model: turn.model,
            effort: turn.reasoning_effort as ReasoningEffort | null,
            sessionId,
            first: { inputId: turn.id, text: promptText(input.text, written.files) }
          },
          {
            inbox: handle.inbox,
            stop: handle.stop,
            close: handle.lock.withPermits(1)(Effect.map(Queue.size(handle.inbox), (size) => {
              if (size > 0) return false
              handle.open = false
              return true
            }))
          },
          {
            event: (event) =>
              event.type === "usage" && event.usage !== undefined
                ? Effect.flatMap(
                  usageOf(event.usage),
                  (usage) => log.emit(turn.conversation_id, turn.id, { ...event, usage })
                )
                : log.emit(turn.conversation_id, turn.id, event),
            session: (id) => repo.updateConversation(turn.conversation_id, { session_id: id }),
            accepted: (inputId) =>
              Effect.gen(function*() {
                yield* repo.acceptInput(inputId, yield* Clock.currentTimeMillis)
                yield* log.emit(turn.conversation_id, turn.id, {
                  type: "input_accepted",
                  kind: "steer",
                  input_id: inputId
                })
              })
          }
        ).pipe(
          Effect.tap((outcome) => finish({ ...turn, started_at: now }, outcome)),
          Effect.onInterrupt(() =>
            finish({ ...turn, started_at: now }, { outcome: "failed", exitCode: null, errorCode: "server_stopped" })
          ),
          Effect.ensuring(Effect.suspend(() => {
            handle.open = false
            handles.delete(turn.id)
            return Deferred.succeed(handle.done, undefined)
          })),
          Effect.forkIn(scope)
        )
      })

    return {
      launch,
      /** The live parts of a turn this process runs, if it runs it. */
      handleOf: (turnId: string): TurnHandle | undefined => handles.get(turnId)
    }
  })

export type Turns = Effect.Effect.Success<ReturnType<typeof makeTurns>>
