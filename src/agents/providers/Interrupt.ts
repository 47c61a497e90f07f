/**
 * Stopping an agent turn (api.md "Agent turn and conversation"): the agent is asked to stop, gets
 * 10 s, then SIGTERM, then (after `killGraceMillis`) SIGKILL; `force` goes to SIGKILL at once.
 * Every wait reads the Clock, so TestClock drives it. Each step is skipped once the agent exited.
 */
import { Deferred, Duration, Effect } from "effect"

export const askGrace = Duration.seconds(10)
/** How long SIGTERM gets before SIGKILL (api.md leaves it open). */
export const killGrace = Duration.seconds(5)

export type Step = "ask" | "term" | "kill"

export interface Escalation {
  /** One step against the agent's processes. */
  readonly step: (step: Step) => Effect.Effect<void>
  /** Completes when the agent's process exited. */
  readonly exited: Deferred.Deferred<void>
}

/** Runs the escalation until the agent exited; answers the steps it took. */
export const escalate = (target: Escalation, force: boolean): Effect.Effect<ReadonlyArray<Step>> =>
  Effect.gen(function*() {
    const taken: Array<Step> = []
    const run = (step: Step) => Effect.zipRight(Effect.sync(() => taken.push(step)), target.step(step))
    /** Waits `grace` or until the agent exited; true when it exited. */
    const waitExit = (grace: Duration.Duration) =>
      Effect.raceFirst(
        Effect.as(Deferred.await(target.exited), true),
        Effect.as(Effect.sleep(grace), false)
      )
    if (force) {
      yield* run("kill")
      return taken
    }
    yield* run("ask")
    if (yield* waitExit(askGrace)) return taken
    yield* run("term")
    if (yield* waitExit(killGrace)) return taken
    yield* run("kill")
    return taken
  })
