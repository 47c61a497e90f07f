/**
 * The identity, organizations and ports areas over a temporary SQLite file, without an HTTP server
 * or a machine driver: what their fast service tests run on. Built in the test's scope, so every
 * service reads the test's TestClock.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { IdentityLive } from "../../src/identity/Live.js"
import { AuditLog } from "../../src/kernel/AuditLog.js"
import { AppConfig, type AppConfigShape } from "../../src/kernel/config/AppConfig.js"
import type { RequestFacts } from "../../src/kernel/http/Authenticate.js"
import { RateLimiter } from "../../src/kernel/http/RateLimiter.js"
import { OpenInvitations } from "../../src/kernel/Invitations.js"
import * as Mail from "../../src/kernel/mail/Mail.js"
import { readOutbox } from "../../src/kernel/mail/Outbox.js"
import { OrganizationStanding } from "../../src/kernel/OrganizationStanding.js"
import * as Database from "../../src/kernel/sql/Database.js"
import { OrganizationsLive } from "../../src/organizations/Live.js"
import { PortsLive } from "../../src/ports/Live.js"
import { EngineReads } from "../../src/runtime/EngineReads.js"
import { MachinesRepo } from "../../src/runtime/MachinesRepo.js"
import { OperationsRepo } from "../../src/runtime/OperationsRepo.js"
import { testConfig } from "../support/TestServer.js"

export const baseUrl = "http://127.0.0.1:8080"

/** The test server's configuration (test/support/TestServer.ts) on port 8080, without a server. */
export const configFor = (dataDir: string, overrides: Partial<AppConfigShape> = {}): AppConfigShape =>
  testConfig(dataDir, 8080, overrides)

/** The three areas over the kernel parts they use, on a fresh database file in `dataDir`. */
export const areasLayer = (
  config: AppConfigShape,
  /** Replaces the real invitations (OrganizationsLive's) that identity asks. */
  invitations?: Layer.Layer<OpenInvitations>
) =>
  PortsLive.pipe(
    Layer.provideMerge(IdentityLive),
    Layer.provideMerge(invitations ?? Layer.empty),
    Layer.provideMerge(OrganizationsLive),
    Layer.provideMerge(
      Layer.mergeAll(
        EngineReads.layer.pipe(Layer.provide(Layer.mergeAll(MachinesRepo.layer, OperationsRepo.layer))),
        Mail.layer,
        RateLimiter.layer,
        AuditLog.layer,
        OrganizationStanding.none
      )
    ),
    Layer.provideMerge(Database.layerFile(config.databaseFile)),
    Layer.provideMerge(Layer.succeed(AppConfig, config))
  )

/** A temporary data dir, removed with the scope. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-area-test-"))),
  (dir) => Effect.sync(() => NodeFs.rmSync(dir, { recursive: true, force: true }))
)

/** Builds the areas in the test's scope; use it as `yield* Effect.provide(test, yield* areas())`. */
export const areas = (overrides: Partial<AppConfigShape> = {}, invitations?: Layer.Layer<OpenInvitations>) =>
  Effect.gen(function*() {
    const config = configFor(yield* tempDir, overrides)
    const context = yield* Layer.build(areasLayer(config, invitations))
    return { config, context }
  })

/** A request as Authenticate reads it. */
export const requestOf = (
  method: string,
  options: { readonly headers?: Record<string, string>; readonly cookies?: Record<string, string> } = {}
): RequestFacts => ({ method, headers: options.headers ?? {}, cookies: options.cookies ?? {} })

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

/** Runs a statement on the test's database, as an operator (or another svc process) would. */
export const execute = (statement: string, ...params: ReadonlyArray<unknown>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement, params as Array<any>))

/** The newest sign-in code mailed to `email`. */
export const latestCode = (config: AppConfigShape, email: string) =>
  Effect.map(readOutbox(NodePath.join(config.dataDir, "outbox")), (messages) => {
    const mine = messages.filter((message) => message.to === email)
    const code = /sign-in code is (\d{6})/.exec(mine[mine.length - 1]?.text ?? "")?.[1]
    if (code === undefined) throw new Error(`no code mailed to ${email}`)
    return code
  })

type AreaServices = Layer.Layer.Success<ReturnType<typeof areasLayer>>

/** Runs `body` with the areas' services on a fresh database (scoped: the test's scope owns them). */
export const withAreas = <A, E>(
  body: (config: AppConfigShape) => Effect.Effect<A, E, AreaServices | SqlClient.SqlClient>,
  overrides: Partial<AppConfigShape> = {},
  invitations?: Layer.Layer<OpenInvitations>
) =>
  Effect.gen(function*() {
    const { config, context } = yield* areas(overrides, invitations)
    return yield* Effect.provide(body(config), context)
  })
