/**
 * The service layers without HTTP, for fast tests of an area's rules: a real SQLite file in a temp
 * data dir and the `process` driver (machines are host folders), built in the test's scope so its
 * Clock is the test's.
 */
import { Context, Effect, Layer } from "effect"
import { servicesWith } from "../../src/App.js"
import * as Drivers from "../../src/drivers/Drivers.js"
import { Accounts } from "../../src/identity/Accounts.js"
import { AppConfig, type AppConfigShape } from "../../src/kernel/config/AppConfig.js"
import type { Requester } from "../../src/kernel/sql/Idempotency.js"
import { tempDir, testConfig } from "./TestServer.js"

export const services = (overrides: Partial<AppConfigShape> = {}) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const config = testConfig(dir, 9, { runtime: "process", ...overrides })
    return yield* Layer.build(servicesWith(Drivers.layer).pipe(Layer.provideMerge(Layer.succeed(AppConfig, config))))
  })

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
