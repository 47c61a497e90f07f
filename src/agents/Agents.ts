/**
 * Agent turns and conversations (api.md "Agents", extensions.md §8). A prompt is committed (turn,
 * conversation, `turn_started`, idempotency record) before it is answered; then the machine is
 * checked for the agent and the attachments are written (a failure there fails the turn and answers
 * 502 `guest_action_failed`), and the turn runner is forked into this service's scope, so a
 * server shutdown ends every agent process. Events are persisted; readers are woken by their
 * conversation's wake-ups (src/kernel/events/Wakeups.ts) and always read from the database, so none is missed.
 */
import { Clock, Context, Deferred, Duration, Effect, Layer, Option, Queue } from "effect"
import { MachineDriver } from "../drivers/MachineDriver.js"
import { agentsDirOf, AppConfig } from "../kernel/config/AppConfig.js"
import { sha256 } from "../kernel/crypto/Tokens.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { makeWakeups } from "../kernel/events/Wakeups.js"
import { iso, isoOrNull } from "../kernel/http/Dto.js"
import { BodyTooLarge, InvalidRequest } from "../kernel/http/Errors.js"
import { GuestActionFailed, requireRunning, RuntimeUnavailable } from "../kernel/http/MachineErrors.js"
import { GroupCommit } from "../kernel/sql/GroupCommit.js"
import { makeIdempotency } from "../kernel/sql/Idempotency.js"
import { canonicalJson, type Requester } from "../kernel/sql/Idempotency.js"
import { Machines } from "../machines/Machines.js"
import {
  type AgentEvent,
  type AgentInputAccepted,
  type AgentPromptRequest,
  type AgentTurnDto,
  maxAttachmentBytes,
  type ProviderModelsDto
} from "./Api.js"
import { AgentConversationsRepo, type ConversationRow, type TurnRow } from "./ConversationsRepo.js"
import { AgentsUnavailable, AgentTurnRunning, ConversationNotFound, NoActiveTurn, ProviderMismatch } from "./Errors.js"
import { type AgentEventRow, AgentEventsRepo } from "./EventsRepo.js"
import type { AgentProviderShape, EventBody } from "./providers/AgentProvider.js"
import { catalogue, priced, publicModel } from "./providers/Catalogue.js"
import { allProviders, providers } from "./providers/Providers.js"
import { installed, readVersions } from "./providers/Tools.js"
import { runTurn, type Steer, sweep, type TurnOutcome } from "./providers/TurnRunner.js"

/** A running turn's live parts: its inbox, its stop signal and whether it still takes steers. */
interface TurnHandle {
  readonly inbox: Queue.Queue<Steer>
  readonly stop: Deferred.Deferred<boolean>
  readonly done: Deferred.Deferred<void>
  readonly lock: Effect.Semaphore
  open: boolean
}

type Usage = NonNullable<AgentEvent["usage"]>

/** Attachments are written here, relative to the agent's working folder (the machine's home). */
export const attachmentsFolder = ".svc/attachments"
/** The most events one read answers; a shorter read has reached the end. */
export const eventsPage = 500

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const commit = yield* GroupCommit
  const repo = yield* AgentConversationsRepo
  const idempotency = yield* makeIdempotency
  const events = yield* AgentEventsRepo
  const driver = yield* MachineDriver
  const scope = yield* Effect.scope
  /** Readers of a conversation's events are woken by its news only (src/kernel/events/Wakeups.ts). */
  const wakeups = makeWakeups<string>()
  const handles = new Map<string, TurnHandle>()
  const agentsDir = agentsDirOf(config)

  const eventsUrl = (machineId: string, conversationId: string) =>
    `${config.baseUrl}/v1/machines/${machineId}/agents/events?conversation_id=${conversationId}`

  const turnDto = (turn: TurnRow): AgentTurnDto => ({
    turn_id: turn.id,
    conversation_id: turn.conversation_id,
    machine_id: turn.machine_id,
    status: turn.status,
    provider: turn.provider as AgentTurnDto["provider"],
    model: turn.model,
    reasoning_effort: turn.reasoning_effort as AgentTurnDto["reasoning_effort"],
    resume: turn.resume === 1,
    interrupt_requested: turn.interrupt_requested === 1,
    events_url: eventsUrl(turn.machine_id, turn.conversation_id),
    error_code: turn.error_code,
    exit_code: turn.exit_code,
    created_at: iso(turn.created_at),
    started_at: isoOrNull(turn.started_at),
    finished_at: isoOrNull(turn.finished_at)
  })

  const eventOf = (row: AgentEventRow): AgentEvent => ({ ...JSON.parse(row.data), seq: row.seq })

  /** Appends an event (inside the caller's transaction, if any); readers are woken by `wake`. */
  const append = (conversationId: string, turnId: string | null, body: EventBody) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      events.append(conversationId, turnId, body.type, {
        ...body,
        id: uuidv7(now),
        turn_id: turnId,
        created_at: iso(now)
      }, now))
  const wake = wakeups.wake
  const emit = (conversationId: string, turnId: string | null, body: EventBody) =>
    Effect.zipRight(commit.transaction(append(conversationId, turnId, body)), wake(conversationId))

  /** Ends a turn: `turn_finished`, the turn and conversation rows and `idle`, in one transaction. */
  const finish = (turn: TurnRow, result: TurnOutcome, message?: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      yield* commit.transaction(Effect.gen(function*() {
        yield* append(turn.conversation_id, turn.id, {
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
        yield* append(turn.conversation_id, null, { type: "idle" })
      }))
      yield* wake(turn.conversation_id)
    })

  // Turns left open by an earlier process. A graceful stop ended their agents; after a crash they
  // may still run in machines that outlived it, so they are killed first.
  for (const turn of yield* repo.openTurns) {
    yield* sweep(driver, turn.machine_id, turn.id, "KILL")
    yield* finish(
      turn,
      { outcome: "failed", exitCode: null, errorCode: "server_restarted" },
      "svc restarted while the turn ran"
    )
  }

  const providerOf = (key: string): AgentProviderShape | undefined => providers[key as keyof typeof providers]

  const availability = (key: string) => {
    const provider = providerOf(key)
    if (provider === undefined) return `the ${key} agent is not part of this build`
    if (driver.toolsPath === undefined) return `the ${driver.name} driver offers no agents`
    if (!installed(agentsDir, provider)) return `the ${key} agent is not installed: run svc agents install`
    return undefined
  }

  const findMachine = (yield* Machines).find

  const runningMachine = (organizationId: string, machineId: string) =>
    Effect.flatMap(findMachine(organizationId, machineId), requireRunning)

  const findConversation = (machineId: string, conversationId: string) =>
    Effect.flatMap(repo.findConversation(machineId, conversationId.toLowerCase()), (found) =>
      Option.match(found, {
        onNone: () => Effect.fail(new ConversationNotFound({ detail: "Conversation not found" })),
        onSome: Effect.succeed
      }))

  /** The turn (and input) an earlier request with the key made; 409 when that request was another. */
  const checkKey = (requester: Requester, fingerprint: string) =>
    Effect.map(
      idempotency.previous(requester, fingerprint),
      Option.flatMap((key) =>
        key.turn_id === null ? Option.none() : Option.some({ turnId: key.turn_id, inputId: key.input_id })
      )
    )

  const recordKey = (requester: Requester, fingerprint: string, turnId: string, inputId: string | null, now: number) =>
    idempotency.record(requester, fingerprint, { turn_id: turnId, input_id: inputId }, now)

  const currentTurn = (turnId: string) =>
    Effect.map(repo.findTurn(turnId), (found) => Option.getOrThrowWith(found, () => new Error(`turn ${turnId} gone`)))

  /** Writes one file into the machine (relative paths are from its home). */
  const writeInto = (machineId: string, path: string, data: Uint8Array) =>
    driver.exec(machineId, {
      argv: ["/bin/sh", "-c", `mkdir -p "$(dirname "$1")" && cat > "$1"`, "write", path],
      stdin: data
    }, () => Effect.void)

  /**
   * Makes the turn start in the machine: attachments written and the agent found. A failure is
   * the machine's (502 `guest_action_failed`) and fails the turn.
   */
  const launch = (
    turn: TurnRow,
    provider: AgentProviderShape,
    body: AgentPromptRequest,
    sessionId: string | null,
    usageTotals: string | null
  ) =>
    Effect.gen(function*() {
      let totals: Usage | null = usageTotals === null ? null : JSON.parse(usageTotals)
      /** The run's own usage, priced when the agent reports no cost. */
      const usageOf = (reported: Usage) =>
        Effect.gen(function*() {
          let usage = reported
          if (provider.cumulativeUsage === true) {
            const before = totals
            totals = reported
            yield* repo.updateConversation(turn.conversation_id, { usage_totals: JSON.stringify(reported) })
            if (before !== null) {
              usage = {
                input_tokens: Math.max(0, reported.input_tokens - before.input_tokens),
                output_tokens: Math.max(0, reported.output_tokens - before.output_tokens),
                cached_input_tokens: Math.max(0, reported.cached_input_tokens - before.cached_input_tokens),
                cost_micro_usd: Math.max(0, reported.cost_micro_usd - before.cost_micro_usd)
              }
            }
          }
          return usage.cost_micro_usd > 0
            ? usage
            : { ...usage, cost_micro_usd: priced(provider.key, turn.model, usage) }
        })
      const tools = driver.toolsPath!
      const files: Array<string> = []
      const failure = (detail: string) =>
        Effect.zipRight(
          finish(turn, { outcome: "failed", exitCode: null, errorCode: "guest_action_failed" }, detail),
          Effect.fail(new GuestActionFailed({ detail }))
        )
      for (const attachment of body.attachments) {
        const path = `${attachmentsFolder}/${turn.id}/${attachment.name}`
        const written = yield* Effect.either(
          writeInto(turn.machine_id, path, Buffer.from(attachment.data_base64, "base64"))
        )
        if (written._tag === "Left" || written.right.exitCode !== 0) {
          return yield* failure(`could not write the attachment ${attachment.name} into the machine`)
        }
        files.push(path)
      }
      const check = yield* Effect.either(driver.exec(turn.machine_id, {
        argv: ["/bin/sh", "-c", `test -x "$1"`, "check", `${tools}/${provider.bin}`]
      }, () => Effect.void))
      if (check._tag === "Left" || check.right.exitCode !== 0) {
        return yield* failure(
          `the ${provider.key} agent cannot be run in this machine (booted before it was installed?)`
        )
      }
      const text = files.length === 0
        ? body.text
        : `${body.text}\n\nAttached files (paths from the working folder):\n${files.map((f) => `- ${f}`).join("\n")}`
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
      const outcome = yield* runTurn(
        {
          driver,
          provider,
          machineId: turn.machine_id,
          turnId: turn.id,
          tools,
          model: turn.model,
          effort: turn.reasoning_effort as TurnRow["reasoning_effort"] & AgentPromptRequest["reasoning_effort"],
          sessionId,
          first: { inputId: turn.id, text }
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
                (usage) => emit(turn.conversation_id, turn.id, { ...event, usage })
              )
              : emit(turn.conversation_id, turn.id, event),
          session: (id) => repo.updateConversation(turn.conversation_id, { session_id: id }),
          accepted: (inputId) =>
            Effect.gen(function*() {
              yield* repo.acceptInput(inputId, yield* Clock.currentTimeMillis)
              yield* emit(turn.conversation_id, turn.id, { type: "input_accepted", kind: "steer", input_id: inputId })
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
      return outcome
    })

  const promptFingerprint = (machineId: string, body: AgentPromptRequest) =>
    sha256(`agents.prompt ${machineId} ${canonicalJson(body)}`)

  /** The conversation's turn that runs now, with its handle; `no_active_turn` when none does. */
  const runningTurn = (requester: Requester, machineId: string, conversationId: string) =>
    Effect.gen(function*() {
      const machine = yield* runningMachine(requester.organizationId, machineId)
      const conversation = yield* findConversation(machine.id, conversationId)
      const open = yield* repo.openTurn(conversation.id)
      const handle = Option.isSome(open) ? handles.get(open.value.id) : undefined
      if (Option.isNone(open) || handle === undefined) {
        return yield* new NoActiveTurn({ detail: "No turn of this conversation is running" })
      }
      return { conversation, handle, turn: open.value }
    })

  /** The answer an input (steer, interrupt) gave first, when its idempotency key was used already. */
  const replayedInput = (requester: Requester, fingerprint: string, kind: "steer" | "interrupt") =>
    Effect.gen(function*() {
      const again = yield* checkKey(requester, fingerprint)
      if (Option.isNone(again)) return Option.none<AgentInputAccepted>()
      const turn = yield* currentTurn(again.value.turnId)
      return Option.some(
        {
          conversation_id: turn.conversation_id,
          turn_id: turn.id,
          input_id: again.value.inputId!,
          kind,
          stopped: turn.finished_at !== null
        } satisfies AgentInputAccepted
      )
    })

  return {
    prompt: (requester: Requester, machineId: string, body: AgentPromptRequest) =>
      Effect.gen(function*() {
        const fingerprint = promptFingerprint(machineId, body)
        const again = yield* checkKey(requester, fingerprint)
        if (Option.isSome(again)) return turnDto(yield* currentTurn(again.value.turnId))
        if (body.text === "" && body.attachments.length === 0) {
          return yield* new InvalidRequest({
            detail: "A prompt needs text or an attachment",
            field_errors: [{ field: "text", message: "give text or at least one attachment" }]
          })
        }
        const attachmentBytes = body.attachments.reduce(
          (sum, attachment) => sum + Math.floor(attachment.data_base64.length * 3 / 4),
          0
        )
        if (attachmentBytes > maxAttachmentBytes) {
          return yield* new BodyTooLarge({ detail: "The attachments hold more than 16 MiB together" })
        }
        if (driver.unavailable !== undefined) {
          return yield* new RuntimeUnavailable({
            detail: `Machines cannot run on this server now: ${driver.unavailable}`
          })
        }
        const machine = yield* runningMachine(requester.organizationId, machineId)
        const existing = body.conversation_id === null
          ? undefined
          : yield* findConversation(machine.id, body.conversation_id)
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
        const unavailable = availability(providerKey)
        if (unavailable !== undefined) return yield* new AgentsUnavailable({ detail: unavailable })
        const provider = providerOf(providerKey)!
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
          const raced = yield* checkKey(requester, fingerprint)
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
          yield* recordKey(requester, fingerprint, turn.id, null, now)
          yield* append(turn.conversation_id, turn.id, {
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
        if (Option.isSome(accepted)) return turnDto(yield* currentTurn(accepted.value))
        yield* wake(turn.conversation_id)
        yield* launch(turn, provider, body, existing?.session_id ?? null, existing?.usage_totals ?? null)
        return turnDto(turn)
      }),

    steer: (requester: Requester, machineId: string, body: { conversation_id: string; text: string }) =>
      Effect.gen(function*() {
        const fingerprint = sha256(`agents.steer ${machineId} ${canonicalJson(body)}`)
        const again = yield* replayedInput(requester, fingerprint, "steer")
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
            recordKey(requester, fingerprint, turn.id, id, now)
          ))
          yield* Queue.offer(handle.inbox, { inputId: id, text: body.text })
          return id
        }))
        return {
          conversation_id: conversation.id,
          turn_id: turn.id,
          input_id: inputId,
          kind: "steer",
          stopped: false
        } satisfies AgentInputAccepted
      }),

    interrupt: (requester: Requester, machineId: string, body: { conversation_id: string; force: boolean }) =>
      Effect.gen(function*() {
        const fingerprint = sha256(`agents.interrupt ${machineId} ${canonicalJson(body)}`)
        const again = yield* replayedInput(requester, fingerprint, "interrupt")
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
          yield* recordKey(requester, fingerprint, turn.id, inputId, now)
        }))
        yield* Deferred.succeed(handle.stop, body.force)
        // A forced stop kills at once: answer once the turn has ended (bounded, in case the host is slow).
        const stopped = body.force
          ? Option.isSome(yield* Effect.timeout(Deferred.await(handle.done), Duration.seconds(10)).pipe(Effect.option))
          : false
        return {
          conversation_id: conversation.id,
          turn_id: turn.id,
          input_id: inputId,
          kind: "interrupt",
          stopped
        } satisfies AgentInputAccepted
      }),

    /** Events after `cursor`; with `waitSeconds`, waits (by the Clock) for one when none is there. */
    events: (organizationId: string, machineId: string, conversationId: string, cursor: number, waitSeconds: number) =>
      Effect.gen(function*() {
        const machine = yield* findMachine(organizationId, machineId)
        const conversation = yield* findConversation(machine.id, conversationId)
        const read = Effect.map(events.after(conversation.id, cursor, eventsPage), (rows) => rows.map(eventOf))
        let found = yield* read
        if (found.length === 0 && waitSeconds > 0) {
          found = yield* Effect.scoped(Effect.gen(function*() {
            const watch = yield* wakeups.watch(conversation.id)
            yield* watch.next
            const now = yield* read
            if (now.length > 0) return now
            yield* Effect.timeout(watch.next, Duration.seconds(waitSeconds)).pipe(Effect.option)
            return yield* read
          }))
        }
        const fresh = yield* findConversation(machine.id, conversation.id)
        const latest = fresh.latest_turn_id === null ? Option.none() : yield* repo.findTurn(fresh.latest_turn_id)
        return {
          active: fresh.status === "running",
          conversation_id: conversation.id,
          cursor: found.length === 0 ? cursor : found[found.length - 1]!.seq,
          events: found,
          latest_turn: Option.getOrNull(Option.map(latest, turnDto))
        }
      }),

    /** The conversation, checked, for the SSE route. */
    conversationFor: (organizationId: string, machineId: string, conversationId: string) =>
      Effect.flatMap(findMachine(organizationId, machineId), (machine) => findConversation(machine.id, conversationId)),

    /** Persisted events after `cursor`, and whether a turn of the conversation is open. */
    readAfter: (conversationId: string, cursor: number) =>
      Effect.gen(function*() {
        const rows = yield* events.after(conversationId, cursor, eventsPage)
        const open = yield* repo.openTurn(conversationId)
        return { events: rows.map(eventOf), active: Option.isSome(open) }
      }),

    /** Calls back at each event of the conversation (readers read the database again). */
    listen: wakeups.listen,

    conversations: (organizationId: string, machineId: string, limit: number, after: string | null) =>
      Effect.gen(function*() {
        const machine = yield* findMachine(organizationId, machineId)
        const rows = yield* repo.pageConversations(machine.id, {
          limit: limit + 1,
          after: after?.toLowerCase() ?? null
        })
        const page = rows.slice(0, limit)
        const turns = yield* repo.turnsByIds(
          page.flatMap((row) => row.latest_turn_id === null ? [] : [row.latest_turn_id])
        )
        const byId = new Map(turns.map((turn) => [turn.id, turn]))
        return {
          conversations: page.map((row) => {
            const latest = row.latest_turn_id === null ? undefined : byId.get(row.latest_turn_id)
            return {
              id: row.id,
              machine_id: row.machine_id,
              provider: row.provider as AgentTurnDto["provider"],
              status: row.status,
              turn_count: row.turn_count,
              events_url: eventsUrl(row.machine_id, row.id),
              latest_turn: latest === undefined ? null : turnDto(latest),
              created_at: iso(row.created_at),
              updated_at: iso(row.updated_at)
            }
          }),
          next_cursor: rows.length > limit ? page[page.length - 1]!.id : null
        }
      }),

    providerModels: Effect.sync((): ProviderModelsDto => {
      const versions = readVersions(agentsDir)
      return {
        source: "bundled",
        providers: allProviders().map((provider) => ({
          provider: provider.key,
          available: availability(provider.key) === undefined,
          version: versions[provider.key] ?? null,
          steer: provider.steer,
          default_model: provider.defaultModel,
          reasoning_efforts: catalogue[provider.key].reasoningEfforts,
          models: catalogue[provider.key].models.map(publicModel)
        }))
      }
    })
  }
})

export class Agents extends Context.Tag("svc/services/Agents")<Agents, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.scoped(Agents, make)
}
