/**
 * A real PostgreSQL server for tests (Debian's `postgresql` package, as CI installs it): a cluster
 * made by `initdb` in a folder of the test's own, run as the `postgres` user when the tests run as
 * root (initdb refuses root), listening on a free loopback port and on a socket in that folder.
 * fsync is off (a test kills svc or PostgreSQL, never the kernel: what reached the OS survives);
 * synchronous commit stays on, as svc's docs ask: with it off, a commit PostgreSQL acknowledged can
 * still sit in its WAL buffers, and a test that stops the server like a crash lost a 202'd exec.
 * Each test asks for a database of its own; the server is stopped and removed with the scope.
 */
import { Effect, type Scope } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { freePort } from "./FreePort.js"

export interface Postgres {
  /** A `postgres://` URL of a new, empty database of the given name on this server. */
  readonly database: (name: string) => Effect.Effect<string>
  /** Stops the server at once (`-m immediate`: no shutdown checkpoint, like a crash) or starts it again. */
  readonly stop: Effect.Effect<void>
  readonly start: Effect.Effect<void>
  readonly port: number
}

const binDir = () => {
  const root = "/usr/lib/postgresql"
  const versions = NodeFs.existsSync(root) ? NodeFs.readdirSync(root).sort((a, b) => Number(b) - Number(a)) : []
  if (versions.length === 0) throw new Error("PostgreSQL is not installed (apt-get install postgresql)")
  return NodePath.join(root, versions[0]!, "bin")
}

const asRoot = process.getuid?.() === 0

/** Runs a PostgreSQL program as the `postgres` user when we are root; throws with its output on failure. */
const run = (program: string, args: ReadonlyArray<string>) => {
  const command = NodePath.join(binDir(), program)
  const done = asRoot
    ? NodeChild.spawnSync("runuser", ["-u", "postgres", "--", command, ...args], { encoding: "utf8" })
    : NodeChild.spawnSync(command, args, { encoding: "utf8" })
  if (done.status !== 0) throw new Error(`${program} ${args.join(" ")}: ${done.stderr}${done.stdout}`)
  return done.stdout
}

const settings = (dir: string, port: number, tcp: boolean) =>
  [
    `-p ${port}`,
    `-c listen_addresses=${tcp ? "127.0.0.1" : "''"}`,
    `-c unix_socket_directories=${dir}`,
    "-c fsync=off",
    "-c full_page_writes=off",
    "-c max_connections=300"
  ].join(" ")

/** A new cluster in a folder of its own, not started; everything about it is synchronous. */
const makeServer = (port: number, tcp: boolean) => {
  const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-pg-"))
  if (asRoot) NodeChild.execFileSync("chown", ["postgres:postgres", dir])
  const data = NodePath.join(dir, "data")
  run("initdb", ["-D", data, "-U", "svc", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
  const host = tcp ? "127.0.0.1" : encodeURIComponent(dir)
  return {
    start: () =>
      void run("pg_ctl", ["-D", data, "-o", settings(dir, port, tcp), "-l", NodePath.join(dir, "log"), "-w", "start"]),
    stop: () => void run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]),
    remove: () => NodeFs.rmSync(dir, { recursive: true, force: true }),
    database: (name: string) => createDatabase(dir, port, name, host),
    dir
  }
}

const createDatabase = (dir: string, port: number, name: string, host: string) => {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`)
  run("psql", ["-h", dir, "-p", String(port), "-U", "svc", "-d", "postgres", "-qc", `CREATE DATABASE ${name}`])
  return `postgres://svc@${host}:${port}/${name}`
}

/** A server of the test's own on a free loopback port, stopped and removed with the scope. */
export const startPostgres: Effect.Effect<Postgres, never, Scope.Scope> = Effect.gen(function*() {
  const port = yield* freePort
  const server = yield* Effect.acquireRelease(
    Effect.sync(() => makeServer(port, true)),
    (made) => Effect.sync(made.remove)
  )
  // A test may have stopped it already.
  yield* Effect.acquireRelease(
    Effect.sync(server.start),
    () => Effect.catchAllDefect(Effect.sync(server.stop), () => Effect.void)
  )
  return {
    database: (name: string) => Effect.sync(() => server.database(name)),
    stop: Effect.sync(server.stop),
    start: Effect.sync(server.start),
    port
  }
})

/**
 * With `SVC_TEST_DATABASE=postgres`, the suite's one server: started by vitest's global set-up
 * (test/support/globalPostgres.ts) before the test processes, which find its folder in
 * `SVC_TEST_POSTGRES_DIR`, and stopped after them.
 */
export const startSuiteServer = () => {
  const server = makeServer(5432, false)
  server.start()
  return { dir: server.dir, close: () => (server.stop(), server.remove()) }
}

let databases = 0

/**
 * A new database for each test's server or services on the suite's server, when it runs on
 * PostgreSQL; else undefined (the SQLite file in the test's data dir).
 */
export const testPostgresUrl = (): string | undefined => {
  if (process.env.SVC_TEST_DATABASE !== "postgres") return undefined
  const dir = process.env.SVC_TEST_POSTGRES_DIR
  if (dir === undefined) throw new Error("SVC_TEST_DATABASE=postgres needs vitest's global set-up (vitest.config.ts)")
  return createDatabase(dir, 5432, `t${process.pid}_${++databases}`, encodeURIComponent(dir))
}
