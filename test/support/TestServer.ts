/**
 * The real service on a loopback port, in this process: a real SQLite file in a temp data dir, the
 * outbox mail transport, the sandbox driver, and the same routes and services as `svc serve`. Built
 * inside the test's scope, so its Clock is the test's TestClock.
 */
import { HttpServer } from "@effect/platform"
import { Context, Effect, Layer, Option } from "effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { ServicesLive, servicesWith } from "../../src/App.js"
import * as Drivers from "../../src/drivers/Drivers.js"
import { MachineDriver, type MachineDriverShape } from "../../src/drivers/MachineDriver.js"
import { unmountUnder } from "../../src/drivers/sandbox/Disk.js"
import { nodeServerOn, RoutesLive } from "../../src/Http.js"
import { Accounts } from "../../src/identity/Accounts.js"
import { AccessRevocations } from "../../src/kernel/AccessRevocations.js"
import { AuditLog } from "../../src/kernel/AuditLog.js"
import {
  AppConfig,
  type AppConfigShape,
  defaultHostCapacity,
  defaultLimits
} from "../../src/kernel/config/AppConfig.js"
import { DomainEvents } from "../../src/kernel/events/DomainEvents.js"
import { readOutbox } from "../../src/kernel/mail/Outbox.js"
import { PortTokens } from "../../src/ports/PortTokens.js"
import { client } from "./Http.js"
import { testPostgresUrl } from "./Postgres.js"

/**
 * Removes a folder that a process the test started may still write in for a moment after the scope
 * closed (a launcher ends once it sees its channel closed, and makes spare files while it idles):
 * rmSync's own retries only retry the last rmdir, so the whole removal is tried again. No sleep, so
 * that it also works under the TestClock.
 */
const removeAll = (dir: string) => {
  // A sandbox disk that a create still under way mounted after the machines were destroyed.
  unmountUnder(dir)
  for (let attempt = 1;; attempt++) {
    try {
      return NodeFs.rmSync(dir, { recursive: true, force: true })
    } catch (error) {
      if (attempt >= 1_000 || (error as NodeJS.ErrnoException).code !== "ENOTEMPTY") throw error
    }
  }
}

export const tempDir = Effect.acquireRelease(
  Effect.sync(() => NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-test-"))),
  (dir) => Effect.sync(() => removeAll(dir))
)

import { freePort } from "./FreePort.js"

export { freePort }

export const testConfig = (dataDir: string, port: number, overrides: Partial<AppConfigShape> = {}): AppConfigShape => ({
  host: "127.0.0.1",
  port,
  baseUrl: `http://127.0.0.1:${port}`,
  uiUrl: `http://127.0.0.1:${port}`,
  dataDir,
  databaseFile: NodePath.join(dataDir, "svc.db"),
  postgresUrl: testPostgresUrl(),
  // What users run (docs/drivers.md); a test on the process driver says why at its opt-out.
  runtime: "sandbox",
  operatorToken: Option.none(),
  secretKeys: { kind: "none" },
  mail: { kind: "outbox", dir: NodePath.join(dataDir, "outbox") },
  mailFrom: undefined,
  oidcProviders: [],
  // Most tests sign up new addresses freely; the sign-up policy's own tests set invite_only.
  signup: "open",
  payments: Option.none(),
  billing: "unlimited",
  webhookAllowPrivate: true,
  logLevel: "none",
  maxBodyBytes: 64 * 1024,
  limits: defaultLimits,
  capacity: defaultHostCapacity(),
  ...overrides
})

/** Machines outlive a server by design (they are adopted after a restart); a test's must not. */
export const destroyedAtEnd = (dir: string, driver: MachineDriverShape) =>
  Effect.addFinalizer(() =>
    Effect.forEach(
      NodeFs.existsSync(NodePath.join(dir, "machines")) ? NodeFs.readdirSync(NodePath.join(dir, "machines")) : [],
      (id) => Effect.ignore(driver.destroy(id)),
      { discard: true }
    )
  )

export interface TestServer {
  readonly url: string
  readonly config: AppConfigShape
  readonly context: Context.Context<Accounts | PortTokens | DomainEvents | AuditLog | AccessRevocations>
  /** The messages in the outbox, oldest first. */
  readonly outbox: Effect.Effect<ReadonlyArray<{ readonly to: string; readonly text: string }>>
  /** A user, an organization they own and a full_access key, as `svc admin bootstrap` makes them. */
  readonly bootstrap: (
    email: string
  ) => Effect.Effect<{ readonly user_id: string; readonly organization_id: string; readonly api_key: string }>
}

/**
 * Wraps the configured driver, for tests that inject host failures (a driver call that errors) to
 * prove retries: everything else still runs on the real driver.
 */
export type DriverWrapper = (inner: MachineDriverShape) => MachineDriverShape

export const startServer = (overrides: Partial<AppConfigShape> = {}, wrapDriver?: DriverWrapper) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const port = yield* freePort
    const config = testConfig(dir, port, overrides)
    const configLayer = Layer.succeed(AppConfig, config)
    const layer = RoutesLive.pipe(
      Layer.provideMerge(nodeServerOn({ host: "127.0.0.1", port })),
      Layer.provideMerge(
        wrapDriver === undefined
          ? ServicesLive
          : servicesWith(
            Layer.effect(MachineDriver, Effect.map(MachineDriver, wrapDriver)).pipe(
              Layer.provide(Drivers.layer)
            )
          )
      ),
      Layer.provideMerge(configLayer)
    )
    const context = yield* Layer.build(layer)
    const address = Context.get(context, HttpServer.HttpServer).address as HttpServer.TcpAddress
    const accounts = Context.get(context, Accounts)
    yield* destroyedAtEnd(dir, Context.get(context, MachineDriver))
    const result: TestServer = {
      url: `http://127.0.0.1:${address.port}`,
      config,
      context: Context.make(Accounts, accounts).pipe(
        Context.add(PortTokens, Context.get(context, PortTokens)),
        Context.add(DomainEvents, Context.get(context, DomainEvents)),
        Context.add(AuditLog, Context.get(context, AuditLog)),
        Context.add(AccessRevocations, Context.get(context, AccessRevocations))
      ),
      outbox: config.mail.kind === "outbox" ? readOutbox(config.mail.dir) : Effect.succeed([]),
      bootstrap: (email) => accounts.bootstrap(email)
    }
    return result
  })

/**
 * A sandbox server whose host runs at most `maxRunning` machines (boots past that wait in the start
 * queue up to `queueSeconds`), with its owner's client.
 */
export const smallHost = (maxRunning: number, queueSeconds = 120) =>
  Effect.gen(function*() {
    const server = yield* startServer({
      runtime: "sandbox",
      capacity: { ...defaultHostCapacity(), maxRunning, queueSeconds }
    })
    const owner = yield* server.bootstrap("owner@example.com")
    return { server, api: client(server.url, { key: owner.api_key }) }
  })
