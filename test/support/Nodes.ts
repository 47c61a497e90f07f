/**
 * Several `svc serve` nodes on one PostgreSQL, on loopback, for the scale-out end-to-end tests
 * (docs/scale-out.md): a server of the test's own, one database, and per node a data dir, a port and
 * a host id of its own, all with the same SVC_SECRET_KEYS. The process driver by default: these
 * tests are about the engine across nodes (leases, mailboxes, senders), not isolation.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import type * as NodeChild from "node:child_process"
import * as NodeCrypto from "node:crypto"
import { kill, nodeEnv, run, serve } from "./Binary.js"
import { client } from "./Http.js"
import type { Api } from "./Machines.js"
import { startPostgres } from "./Postgres.js"

export interface SvcNode {
  readonly host: string
  readonly url: string
  readonly dataDir: string
  readonly env: Record<string, string>
  /** The owner's key, through this node. */
  readonly api: Api
  /** The running `svc serve`, or undefined while it is killed. */
  child: NodeChild.ChildProcess | undefined
}

/** `svc serve` of `node` (again), until the test's scope closes. */
export const startNode = (node: SvcNode) =>
  Effect.map(serve(node.env), (child) => {
    node.child = child
    return child
  })

/** Kills `node` with SIGKILL and waits until it is gone. */
export const killNode = (node: SvcNode) =>
  Effect.suspend(() => {
    const child = node.child
    node.child = undefined
    return child === undefined ? Effect.void : kill(child)
  })

/**
 * PostgreSQL and one node per host id in `hosts`, started one after the other (the first takes the
 * once-only work), and an owner bootstrapped through the first. `extra` is merged into every node's
 * settings.
 */
export const startNodes = (hosts: ReadonlyArray<string>, extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const postgres = yield* startPostgres
    const database = yield* postgres.database("nodes")
    const keys = NodeCrypto.randomBytes(32).toString("base64")
    const made = yield* Effect.forEach(hosts, (host) =>
      Effect.gen(function*() {
        const settings = yield* nodeEnv({
          SVC_RUNTIME: "process",
          SVC_DATABASE_URL: database,
          SVC_SECRET_KEYS: keys,
          // Two live nodes never share a host (the second would fence the first).
          SVC_HOST_ID: host,
          ...extra
        })
        const env = { ...settings.env, SVC_INTERNAL_URL: settings.url }
        return { host, url: settings.url, dataDir: settings.dataDir, env }
      }))
    const children = yield* Effect.forEach(made, (node) => serve(node.env))
    const boot = yield* run(["admin", "bootstrap", "--email", "nodes@example.com"], made[0]!.env)
    assert.strictEqual(boot.code, 0, boot.stderr)
    const key: string = JSON.parse(boot.stdout).api_key
    const nodes: Array<SvcNode> = made.map((node, index) => ({
      ...node,
      api: client(node.url, { key }),
      child: children[index]
    }))
    return { postgres, nodes, key }
  })
