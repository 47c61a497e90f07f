/**
 * The service layers without HTTP, for fast tests of an area's rules: a real SQLite file in a temp
 * data dir and the `process` driver (machines are host folders), built in the test's scope so its
 * Clock is the test's. Process driver: these judge rules (billing, limits, alerts, retention), not
 * isolation, which test/drivers and every end-to-end server (test/support/TestServer.ts) run on the
 * sandbox; a test that needs the sandbox passes `{ runtime: "sandbox" }`.
 */
import { Chunk, Context, Effect, Either, Layer, TestClock } from "effect"
import { servicesWith } from "../../src/App.js"
import * as Drivers from "../../src/drivers/Drivers.js"
import { MachineDriver } from "../../src/drivers/MachineDriver.js"
import { Accounts } from "../../src/identity/Accounts.js"
import { AppConfig, type AppConfigShape } from "../../src/kernel/config/AppConfig.js"
import type { Requester } from "../../src/kernel/sql/Idempotency.js"
import type { NewMachine } from "../../src/machines/Machines.js"
import { type DriverWrapper, tempDir, testConfig } from "./TestServer.js"

export const services = (overrides: Partial<AppConfigShape> = {}, wrapDriver?: DriverWrapper) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const config = testConfig(dir, 9, { runtime: "process", ...overrides })
    const driver = wrapDriver === undefined
      ? Drivers.layer
      : Layer.effect(MachineDriver, Effect.map(MachineDriver, wrapDriver)).pipe(Layer.provide(Drivers.layer))
    return yield* Layer.build(servicesWith(driver).pipe(Layer.provideMerge(Layer.succeed(AppConfig, config))))
  })

/**
 * Waits in real time (the machines run on the host, not on the test's Clock) until `check` answers;
 * up to 60 s, within the test's 90: on a loaded host a PostgreSQL run took over 30 s here.
 */
export const until = <A, E, R>(check: Effect.Effect<A | undefined, E, R>, ms = 60_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    while (true) {
      const found = yield* check
      if (found !== undefined) return found
      if (Date.now() > deadline) return yield* Effect.dieMessage("until: timed out")
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
    }
  })

/**
 * The idle signal of a worker on the TestClock: waits (in real time) until a fiber sleeps until the
 * instant `at`, i.e. a worker has ended its pass and waits for its next due time. Nothing it would
 * do before `at` is left to happen, so a test may assert that nothing happened, then move the clock.
 */
export const asleepUntil = (at: number) =>
  until(Effect.map(TestClock.sleeps(), (sleeps) => Chunk.contains(sleeps, at) || undefined))

/** A user who owns a new organization, as the requester of changes (no Idempotency-Key). */
export const owner = (context: Context.Context<any>, email: string) =>
  Effect.gen(function*() {
    const made = yield* Context.get(context, Accounts).bootstrap(email)
    const requester: Requester = {
      organizationId: made.organization_id,
      userId: made.user_id,
      idempotencyKey: undefined
    }
    return requester
  })

/** A new machine's settings with the API's defaults, small and offline: what the service tests create. */
export const newMachine = (name: string, start = false): NewMachine => ({
  name,
  size: "small",
  image: "default",
  environment_id: null,
  internet_access: false,
  auto_stop_seconds: null,
  idle_sleep_seconds: null,
  setup_script: null,
  template: null,
  start
})

/** The error code an effect fails with, or "succeeded". */
export const failureTag = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.either(effect), Either.match({ onLeft: (error) => error._tag, onRight: () => "succeeded" }))
