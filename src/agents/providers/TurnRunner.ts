/**
 * One agent turn inside a machine: the agent's process (through the driver's exec, so it runs as
 * any command in that machine does), its output mapped to events, steer inputs and interrupt.
 *
 * A turn is one or more runs of the agent: the prompt's, then one per steer that arrived too late
 * for the running agent to take (a `queued` agent, or a `live` one whose stdin had closed). Every
 * process of a run carries `SVC_AGENT_TURN=<turn id>` in its environment; signals go to all of them
 * (the agent's tool shells too) through a small sweep run in the machine, and the runner's scope
 * ends with a SIGKILL sweep, so no agent process outlives its turn.
 */
import { Deferred, Effect, Exit, Fiber, Option, Queue, Ref } from "effect"
import { guestArgv } from "../../drivers/Guest.js"
import type { MachineDriverShape } from "../../drivers/MachineDriver.js"
import type { AgentProviderShape, EventBody } from "./AgentProvider.js"
import { escalate, type Step } from "./Interrupt.js"
import type { ReasoningEffort } from "./Schemas.js"

/**
 * guest/key-check.sh runs the agent only when one of the provider's key variables is set in the
 * machine's environment; else it exits with these at once. Without a key the agents do not fail:
 * they retry a provider that refuses them, some for minutes.
 */
const keyMissingExit = 97
const keyMissingMark = "svc: no provider key"

export interface Steer {
  readonly inputId: string
  readonly text: string
}

export interface TurnSink {
  readonly event: (body: EventBody) => Effect.Effect<void>
  readonly session: (id: string) => Effect.Effect<void>
  /** The agent confirmed a steer input. */
  readonly accepted: (inputId: string) => Effect.Effect<void>
}

export interface TurnControl {
  /** Steer inputs, in order. */
  readonly inbox: Queue.Queue<Steer>
  /** Set once by interrupt, with `force`. */
  readonly stop: Deferred.Deferred<boolean>
  /**
   * Ends the turn for steers: true when the inbox was empty and no steer can enter any more (the
   * service checks the same flag under the same lock before it offers one).
   */
  readonly close: Effect.Effect<boolean>
}

export interface TurnSpec {
  readonly driver: MachineDriverShape
  readonly provider: AgentProviderShape
  readonly machineId: string
  readonly turnId: string
  readonly tools: string
  readonly model: string
  readonly effort: ReasoningEffort | null
  readonly sessionId: string | null
  readonly first: Steer
}

export interface TurnOutcome {
  readonly outcome: "completed" | "interrupted" | "failed"
  readonly exitCode: number | null
  readonly errorCode: string | null
}

export const turnMarker = "SVC_AGENT_TURN"

const signals: Record<Step, string> = { ask: "INT", term: "TERM", kill: "KILL" }

/** Sends `signal` to every process of the machine whose environment holds the turn's marker. */
export const sweep = (driver: MachineDriverShape, machineId: string, turnId: string, signal: string) =>
  driver.exec(machineId, {
    argv: [
      "/bin/sh",
      "-c",
      `for p in /proc/[0-9]*; do
  n=\${p#/proc/}; [ "$n" = "$$" ] && continue
  if tr '\\0' '\\n' < "$p/environ" 2>/dev/null | grep -qx "$1"; then kill -s "$2" "$n" 2>/dev/null; fi
done; exit 0`,
      "sweep",
      `${turnMarker}=${turnId}`,
      signal
    ]
  }, () => Effect.void).pipe(Effect.ignore)

const encoder = new TextEncoder()
const line = (text: string) => encoder.encode(`${text}\n`)

export const runTurn = (spec: TurnSpec, control: TurnControl, sink: TurnSink): Effect.Effect<TurnOutcome> =>
  Effect.gen(function*() {
    const session = yield* Ref.make(spec.sessionId)
    const stopped = yield* Ref.make(false)
    let next: Steer | undefined = spec.first
    let last: TurnOutcome = { outcome: "failed", exitCode: null, errorCode: "agent_failed" }
    while (next !== undefined) {
      const input: Steer = next
      next = undefined
      const isFollowUp = input.inputId !== spec.first.inputId
      const resuming = (yield* Ref.get(session)) !== null
      let run = yield* runOnce(spec, control, sink, input, isFollowUp, session, stopped, resuming)
      if (run.unresumable) {
        // The agent could not find its session: one whose first turn was ended before the agent
        // wrote it down (claude keeps the transcript only once it has more than the question).
        // The conversation goes on in a new session rather than failing every prompt from now on.
        yield* Effect.logWarning("the agent could not resume its session; starting a new one").pipe(
          Effect.annotateLogs({ turn_id: spec.turnId, reason: run.stderr })
        )
        yield* Ref.set(session, null)
        run = yield* runOnce(spec, control, sink, input, isFollowUp, session, stopped, false)
      }
      last = run.outcome
      if (last.outcome !== "completed") break
      if (run.carried !== undefined) {
        next = run.carried
        continue
      }
      const more: Option.Option<Steer> = yield* Queue.poll(control.inbox)
      if (Option.isSome(more)) next = more.value
      else if (!(yield* control.close)) next = Option.getOrUndefined(yield* Queue.poll(control.inbox))
    }
    return last
  }).pipe(
    // Whatever happened, nothing of the turn keeps running.
    Effect.ensuring(sweep(spec.driver, spec.machineId, spec.turnId, "KILL"))
  )

const runOnce = (
  spec: TurnSpec,
  control: TurnControl,
  sink: TurnSink,
  input: Steer,
  isFollowUp: boolean,
  session: Ref.Ref<string | null>,
  stopped: Ref.Ref<boolean>,
  resuming: boolean
): Effect.Effect<{
  readonly outcome: TurnOutcome
  readonly carried: Steer | undefined
  /** The agent could not find the session it was to resume, and did nothing: nothing was reported. */
  readonly unresumable?: boolean
  readonly stderr?: string
}> =>
  Effect.gen(function*() {
    const { driver, provider } = spec
    const live = provider.steer === "live"
    const plan = provider.plan({
      tools: spec.tools,
      text: input.text,
      inputId: input.inputId,
      model: spec.model,
      effort: spec.effort,
      sessionId: yield* Ref.get(session)
    })
    const stdin = yield* Queue.unbounded<Uint8Array>()
    for (const text of plan.stdin) yield* Queue.offer(stdin, line(text))
    if (!live) yield* Queue.shutdown(stdin)
    /** Inputs the live agent was given and has not finished with. */
    const pending = new Set<string>([input.inputId])
    let stdinOpen = live
    let sawResult = false
    let ok = false
    let confirmed = !isFollowUp
    const lock = yield* Effect.makeSemaphore(1)
    const closeStdin = lock.withPermits(1)(Effect.suspend(() => {
      if (!stdinOpen) return Effect.void
      stdinOpen = false
      return Queue.shutdown(stdin)
    }))
    const parse = provider.parser()
    let buffer = ""
    let stderr = ""
    let unresumable = false
    /** Set when the agent can no longer succeed (mapped `fatal`): the turn ends at once. */
    let fatal: { readonly code: string; readonly message: string } | undefined
    const fatalSeen = yield* Deferred.make<void>()
    const handleLine = (text: string) =>
      Effect.forEach(parse(text), (mapped) => {
        switch (mapped._tag) {
          case "event":
            return sink.event(mapped.event)
          case "session":
            return Effect.zipRight(
              Ref.set(session, mapped.id),
              Effect.suspend(() => {
                if (confirmed) return sink.session(mapped.id)
                confirmed = true
                // A queued steer: the agent took it when it started on it.
                return Effect.zipRight(sink.session(mapped.id), sink.accepted(input.inputId))
              })
            )
          case "accepted":
            return mapped.inputId === spec.first.inputId || mapped.inputId === input.inputId
              ? Effect.void
              : sink.accepted(mapped.inputId)
          case "settled":
            pending.delete(mapped.inputId)
            return pending.size === 0 ? closeStdin : Effect.void
          case "unresumable":
            unresumable = true
            return Effect.void
          case "result":
            sawResult = true
            ok = mapped.ok
            return Effect.void
          case "fatal":
            if (fatal !== undefined) return Effect.void
            fatal = mapped
            return Deferred.succeed(fatalSeen, undefined)
        }
      }, { discard: true })
    const onOutput = (stream: "stdout" | "stderr", chunk: Uint8Array) =>
      Effect.suspend(() => {
        const text = Buffer.from(chunk).toString("utf8")
        if (stream === "stderr") {
          stderr = (stderr + text).slice(-4096)
          return Effect.void
        }
        buffer += text
        const lines = buffer.split("\n")
        buffer = lines.pop() ?? ""
        return Effect.forEach(lines, handleLine, { discard: true })
      })
    const exited = yield* Deferred.make<void>()
    const keys = provider.keys(spec.model)
    const exec = yield* driver.exec(spec.machineId, {
      argv: keys.length === 0 ? plan.argv : guestArgv("key-check", keys.join(" "), ...plan.argv),
      env: { ...plan.env, [turnMarker]: spec.turnId },
      input: stdin
    }, onOutput).pipe(
      Effect.ensuring(Deferred.succeed(exited, undefined)),
      Effect.fork
    )
    // Steers reach a live agent's stdin while it is open; later ones wait for a follow-up run.
    let carried: Steer | undefined
    const forwarder = yield* Effect.fork(
      live
        ? Effect.gen(function*() {
          while (true) {
            const steer = yield* Queue.take(control.inbox)
            const delivered = yield* lock.withPermits(1)(Effect.sync(() => {
              if (!stdinOpen) return false
              pending.add(steer.inputId)
              Queue.unsafeOffer(stdin, line(provider.steerLine!(steer.inputId, steer.text)))
              return true
            }))
            if (!delivered) return void (carried = steer)
          }
        })
        : Effect.never
    )
    const stopper = yield* Effect.fork(
      Effect.flatMap(Deferred.await(control.stop), (force) =>
        Effect.gen(function*() {
          yield* Ref.set(stopped, true)
          yield* Fiber.interrupt(forwarder)
          yield* escalate({
            exited,
            step: (step) =>
              step === "ask" && provider.interruptLine !== undefined
                ? lock.withPermits(1)(Effect.suspend(() =>
                  stdinOpen ? Queue.offer(stdin, line(provider.interruptLine!(spec.turnId))) : Effect.void
                ))
                : step === "kill"
                ? Effect.zipRight(sweep(driver, spec.machineId, spec.turnId, signals[step]), Fiber.interrupt(exec))
                : sweep(driver, spec.machineId, spec.turnId, signals[step])
          }, force)
        }))
    )
    // An agent that can no longer succeed is ended like a forced interrupt, without waiting for it.
    const ender = yield* Effect.fork(
      Effect.zipRight(
        Deferred.await(fatalSeen),
        Effect.zipRight(sweep(driver, spec.machineId, spec.turnId, signals.kill), Fiber.interrupt(exec))
      )
    )
    const exit = yield* Fiber.await(exec)
    yield* Fiber.interrupt(forwarder)
    yield* Fiber.interrupt(stopper)
    yield* Fiber.interrupt(ender)
    if (buffer.trim() !== "") {
      yield* handleLine(buffer)
    }
    const interrupted = yield* Ref.get(stopped)
    const done = (outcome: TurnOutcome) => ({ outcome, carried })
    if (interrupted) {
      return done({
        outcome: "interrupted",
        exitCode: Exit.isSuccess(exit) ? exit.value.exitCode : null,
        errorCode: null
      })
    }
    if (fatal !== undefined) {
      yield* sink.event({ type: "error", code: fatal.code, message: fatal.message })
      return done({ outcome: "failed", exitCode: null, errorCode: fatal.code })
    }
    if (Exit.isFailure(exit)) {
      const reason = Exit.isInterrupted(exit) ? "the turn was ended" : String(exit.cause)
      yield* sink.event({ type: "error", code: "agent_failed", message: reason })
      return done({ outcome: "failed", exitCode: null, errorCode: "agent_failed" })
    }
    const exitCode = exit.value.exitCode
    if (exitCode === keyMissingExit && stderr.includes(keyMissingMark)) {
      const message = `No model provider key in the machine's environment: set ${keys.join(" or ")}`
      yield* sink.event({ type: "error", code: "provider_key_missing", message })
      return done({ outcome: "failed", exitCode, errorCode: "provider_key_missing" })
    }
    // A live agent whose stdin svc closed may exit non-zero after its last result.
    if (sawResult && ok && (exitCode === 0 || live)) {
      return done({ outcome: "completed", exitCode, errorCode: null })
    }
    if (resuming && unresumable && !sawResult && carried === undefined) {
      return { ...done({ outcome: "failed", exitCode, errorCode: "agent_failed" }), unresumable: true, stderr }
    }
    if (!sawResult) {
      yield* sink.event({
        type: "error",
        code: "agent_failed",
        message: stderr.trim() === "" ? `the agent exited with ${exitCode}` : stderr.trim()
      })
    }
    return done({ outcome: "failed", exitCode, errorCode: "agent_failed" })
  })
