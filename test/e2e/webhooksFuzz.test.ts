/** Hundreds of malformed bodies on every webhook route that takes one: never a 500. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import { client } from "../support/Http.js"
import { startServer } from "../support/TestServer.js"

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
const random = (seed: number) => () => {
  seed |= 0
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const bodies = (count: number, seed: number): Array<string> => {
  const next = random(seed)
  const pick = <A>(items: ReadonlyArray<A>) => items[Math.floor(next() * items.length)]!
  const scalars = [
    null,
    true,
    false,
    0,
    -1,
    1.5,
    1e308,
    "",
    "x",
    "x".repeat(3000),
    "https://",
    "https://example.com/",
    "http://127.0.0.1/",
    "https://[::1]/",
    "https://a@b.example/",
    "\u0000",
    "💥",
    [],
    {},
    ["machine.ready"],
    ["machine.ready", "machine.ready"],
    ["nope"],
    [1, 2],
    { url: 1 }
  ]
  const value = (depth: number): unknown =>
    depth > 2 || next() < 0.6
      ? pick(scalars)
      : next() < 0.5
      ? Array.from({ length: Math.floor(next() * 4) }, () => value(depth + 1))
      : Object.fromEntries(Array.from({ length: Math.floor(next() * 4) }, () => [pick(keys), value(depth + 1)]))
  const keys = ["name", "url", "events", "enabled", "extra", "__proto__", "constructor"]
  const out: Array<string> = ["", "{", "[]", "null", "1", "\"text\"", "{\"name\":", "{}}", "\u0000", "{\"a\":1}x"]
  while (out.length < count) {
    const body: Record<string, unknown> = {}
    for (const key of keys) if (next() < 0.6) body[key] = value(0)
    out.push(JSON.stringify(body))
  }
  return out
}

describe("webhook routes under malformed bodies", () => {
  it.scopedLive("never answer 500", () =>
    Effect.gen(function*() {
      const server = yield* startServer({
        secretKeys: { kind: "given", keys: [Redacted.make(NodeCrypto.randomBytes(32))] },
        webhookAllowPrivate: false
      })
      const owner = yield* server.bootstrap("fuzz@example.com")
      const api = client(server.url, { key: owner.api_key })
      const made = yield* api("POST", "/v1/webhooks", {
        json: { name: "f", url: "https://hooks.example.com/", events: ["machine.ready"] }
      })
      const id = made.body.webhook.id
      const statuses = new Map<number, number>()
      const routes: ReadonlyArray<readonly [string, string]> = [
        ["POST", "/v1/webhooks"],
        ["PATCH", `/v1/webhooks/${id}`],
        ["POST", `/v1/webhooks/${id}/rotate-secret`]
      ]
      for (const [index, [method, path]] of routes.entries()) {
        yield* Effect.forEach(bodies(300, index + 1), (body) =>
          Effect.map(
            api(method, path, { body, headers: { "content-type": "application/json" } }),
            (reply) => {
              statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1)
              assert.isBelow(reply.status, 500, `${method} ${path} ${body.slice(0, 200)} -> ${reply.text}`)
            }
          ), { concurrency: 8, discard: true })
      }
      assert.isAtLeast([...statuses.values()].reduce((a, b) => a + b, 0), 900)
      // Whatever was created stayed within the limit.
      assert.isAtMost((yield* api("GET", "/v1/webhooks?limit=100")).body.items.length, 10)
    }), 60_000)
})
