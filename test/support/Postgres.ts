/**
 * A real PostgreSQL server for tests (Debian's `postgresql` package, as CI installs it): a cluster
 * made by `initdb` in a folder of the test's own, run as the `postgres` user when the tests run as
 * root (initdb refuses root), listening on a free loopback port and on a socket in that folder.
 * Durability settings are off (fsync, synchronous commit): a test kills svc, never the kernel.
 * Each test asks for a database of its own; the server is stopped and removed with the scope.
 */
import { Effect, type Scope } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { freePort } from "./TestServer.js"

export interface Postgres {
  /** A `postgres://` URL of a new, empty database of the given name on this server. */
  readonly database: (name: string) => Effect.Effect<string>
  /** Stops the server at once (`-m immediate`: no shutdown checkpoint, like a crash) or starts it again. */
  readonly stop: Effect.Effect<void>
  readonly start: Effect.Effect<void>
  readonly port: number
}

const binDir = (() => {
  const root = "/usr/lib/postgresql"
  const versions = NodeFs.existsSync(root) ? NodeFs.readdirSync(root).sort((a, b) => Number(b) - Number(a)) : []
  if (versions.length === 0) throw new Error("PostgreSQL is not installed (apt-get install postgresql)")
  return NodePath.join(root, versions[0]!, "bin")
})()

const asRoot = process.getuid?.() === 0

/** Runs a PostgreSQL program as the `postgres` user when we are root; throws with its output on failure. */
const run = (program: string, args: ReadonlyArray<string>) => {
  const command = NodePath.join(binDir, program)
  const done = asRoot
    ? NodeChild.spawnSync("runuser", ["-u", "postgres", "--", command, ...args], { encoding: "utf8" })
    : NodeChild.spawnSync(command, args, { encoding: "utf8" })
  if (done.status !== 0) throw new Error(`${program} ${args.join(" ")}: ${done.stderr}${done.stdout}`)
  return done.stdout
}

const settings = (dir: string, port: number) =>
  [
    `-p ${port}`,
    "-c listen_addresses=127.0.0.1",
    `-c unix_socket_directories=${dir}`,
    "-c fsync=off",
    "-c synchronous_commit=off",
    "-c full_page_writes=off",
    "-c max_connections=300"
  ].join(" ")

export const startPostgres: Effect.Effect<Postgres, never, Scope.Scope> = Effect.gen(function*() {
  const port = yield* freePort
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => {
      const made = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-pg-"))
      if (asRoot) NodeChild.execFileSync("chown", ["postgres:postgres", made])
      return made
    }),
    (made) => Effect.sync(() => NodeFs.rmSync(made, { recursive: true, force: true }))
  )
  const data = NodePath.join(dir, "data")
  run("initdb", ["-D", data, "-U", "svc", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
  const start = Effect.sync(() => {
    run("pg_ctl", ["-D", data, "-o", settings(dir, port), "-l", NodePath.join(dir, "log"), "-w", "start"])
  })
  const stop = Effect.sync(() => {
    run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"])
  })
  // A test may have stopped it already.
  yield* Effect.acquireRelease(start, () => Effect.catchAllDefect(stop, () => Effect.void))
  const database = (name: string) =>
    Effect.sync(() => {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`)
      run("psql", ["-h", dir, "-p", String(port), "-U", "svc", "-d", "postgres", "-qc", `CREATE DATABASE ${name}`])
      return `postgres://svc@127.0.0.1:${port}/${name}`
    })
  return { database, stop, start, port }
})
