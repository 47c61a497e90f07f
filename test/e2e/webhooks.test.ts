/**
 * Webhooks end to end on the in-process server: the routes with their limits and errors, and
 * deliveries to real receivers, signed as Standard Webhooks (checked with the `standardwebhooks`
 * package, as a receiver would), queued while disabled, re-signed after a rotation.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import { Webhook } from "standardwebhooks"
import { perEndpoint } from "../../src/webhooks/Worker.js"
import { client } from "../support/Http.js"
import { eventually, settled } from "../support/Machines.js"
import { httpReceiver, type Receiver } from "../support/Receivers.js"
import { startServer } from "../support/TestServer.js"

const secretKeys = { kind: "given" as const, keys: [Redacted.make(NodeCrypto.randomBytes(32))] }

const typesOf = (receiver: Receiver) => receiver.received.map((r) => JSON.parse(r.body).type as string)

describe("webhooks", () => {
  it.scopedLive("endpoints: secret shown on create and rotate only, sealed at rest, 10 at most, errors", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ secretKeys, webhookAllowPrivate: false })
      const owner = yield* server.bootstrap("hooks@example.com")
      const api = client(server.url, { key: owner.api_key })
      const body = { name: "ci", url: "https://hooks.example.com/svc", events: ["machine.ready"] }
      const created = yield* api("POST", "/v1/webhooks", { json: body })
      assert.strictEqual(created.status, 201)
      assert.match(created.body.secret, /^whsec_/)
      assert.deepInclude(created.body.webhook, { name: "ci", enabled: true, events: ["machine.ready"] })
      const id = created.body.webhook.id
      const got = yield* api("GET", `/v1/webhooks/${id}`)
      assert.strictEqual(got.status, 200)
      assert.notInclude(got.text, created.body.secret)
      assert.notInclude(NodeFs.readFileSync(server.config.databaseFile).toString("latin1"), created.body.secret)

      for (
        const url of [
          "http://hooks.example.com/",
          "https://127.0.0.1/",
          "https://[::ffff:10.0.0.1]/",
          "https://0x7f000001/"
        ]
      ) {
        const refused = yield* api("POST", "/v1/webhooks", { json: { ...body, url } })
        assert.strictEqual(refused.status, 422, url)
        assert.strictEqual(refused.body.field_errors[0].field, "url")
      }
      assert.strictEqual((yield* api("POST", "/v1/webhooks", { json: { ...body, events: [] } })).status, 422)
      assert.strictEqual((yield* api("POST", "/v1/webhooks", { json: { ...body, events: ["nope"] } })).status, 422)

      const rotated = yield* api("POST", `/v1/webhooks/${id}/rotate-secret`)
      assert.strictEqual(rotated.status, 200)
      assert.notStrictEqual(rotated.body.secret, created.body.secret)
      assert.isString(rotated.body.webhook.secret_rotated_at)

      const patched = yield* api("PATCH", `/v1/webhooks/${id}`, { json: { enabled: false, name: null } })
      assert.deepInclude(patched.body, { enabled: false, name: "ci" })
      assert.strictEqual(
        (yield* api("PATCH", `/v1/webhooks/${id}`, { json: { url: "https://10.1.1.1/" } })).status,
        422
      )

      for (let i = 1; i < 10; i++) assert.strictEqual((yield* api("POST", "/v1/webhooks", { json: body })).status, 201)
      const eleventh = yield* api("POST", "/v1/webhooks", { json: body })
      assert.strictEqual(eleventh.status, 409)
      assert.strictEqual(eleventh.body.code, "webhook_limit_reached")
      const page = yield* api("GET", "/v1/webhooks?limit=4")
      assert.strictEqual(page.body.items.length, 4)
      const rest = yield* api("GET", `/v1/webhooks?limit=100&cursor=${page.body.next_cursor}`)
      assert.strictEqual(rest.body.items.length, 6)
      assert.isNull(rest.body.next_cursor)

      assert.strictEqual((yield* api("DELETE", `/v1/webhooks/${id}`)).status, 204)
      assert.strictEqual((yield* api("GET", `/v1/webhooks/${id}`)).status, 404)
      assert.strictEqual((yield* api("GET", `/v1/webhooks/${id}/deliveries`)).status, 404)

      // Only full-access keys of owners and admins.
      const readOnly = yield* api("POST", "/v1/api-keys", { json: { name: "ro", preset: "read_only" } })
      const ro = client(server.url, { key: readOnly.body.secret })
      assert.strictEqual((yield* ro("GET", "/v1/webhooks")).status, 403)
      const db = new (yield* Effect.promise(() => import("better-sqlite3"))).default(server.config.databaseFile)
      db.prepare("UPDATE memberships SET role = 'operator' WHERE user_id = ?").run(owner.user_id)
      db.close()
      assert.strictEqual((yield* api("GET", "/v1/webhooks")).body.code, "forbidden")
    }))

  it.scopedLive("503 webhooks_unavailable without secret keys", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ secretKeys: { kind: "none" } })
      const owner = yield* server.bootstrap("nokeys@example.com")
      const api = client(server.url, { key: owner.api_key })
      const refused = yield* api("POST", "/v1/webhooks", {
        json: { name: "x", url: "https://hooks.example.com/", events: ["machine.ready"] }
      })
      assert.strictEqual(refused.status, 503)
      assert.strictEqual(refused.body.code, "webhooks_unavailable")
    }))

  it.scopedLive("deliveries: signed, data is the resource, queued while disabled, rotation applies at once", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ secretKeys })
      const owner = yield* server.bootstrap("deliver@example.com")
      const api = client(server.url, { key: owner.api_key })
      const receiver = yield* httpReceiver()
      const made = yield* api("POST", "/v1/webhooks", {
        json: {
          name: "all",
          url: receiver.url,
          events: ["machine.created", "machine.ready", "machine.stopped", "operation.succeeded"]
        }
      })
      const hook = made.body.webhook.id
      const create = yield* api("POST", "/v1/machines", { json: { name: "hooked" } })
      assert.strictEqual(create.status, 202)
      assert.strictEqual((yield* settled(api, create.body.operation_id)).status, "succeeded")
      yield* eventually(Effect.sync(() => receiver.received.length >= 3 ? true : undefined))
      assert.sameMembers(typesOf(receiver), ["machine.created", "machine.ready", "operation.succeeded"])
      const verifier = new Webhook(made.body.secret)
      for (const delivery of receiver.received) {
        const payload = verifier.verify(delivery.body, delivery.headers) as any
        assert.isString(payload.timestamp)
        if (payload.type.startsWith("machine.")) assert.strictEqual(payload.data.id, create.body.machine_id)
        if (payload.type === "operation.succeeded") {
          assert.strictEqual(payload.data.id, create.body.operation_id)
          assert.strictEqual(payload.data.status, "succeeded")
        }
      }
      const ready = receiver.received.find((r) => JSON.parse(r.body).type === "machine.ready")!
      assert.strictEqual(JSON.parse(ready.body).data.state, "running")

      const listed = yield* eventually(Effect.map(
        api("GET", `/v1/webhooks/${hook}/deliveries`),
        (reply) => reply.body.items.every((d: any) => d.status === "succeeded") ? reply : undefined
      ))
      assert.strictEqual(listed.body.items.length, 3)
      assert.deepInclude(listed.body.items[0], {
        attempt_count: 1,
        last_status_code: 200,
        machine_id: create.body.machine_id
      })

      // Disabled: the stop's deliveries wait; a rotation meanwhile signs them with the new secret.
      yield* api("PATCH", `/v1/webhooks/${hook}`, { json: { enabled: false } })
      const stop = yield* api("POST", `/v1/machines/${create.body.machine_id}/stop`, { json: {} })
      assert.strictEqual((yield* settled(api, stop.body.operation_id)).status, "succeeded")
      // Both deliveries of the stop are queued (the idle signal: no pause); none went out.
      yield* eventually(
        Effect.map(
          api("GET", `/v1/webhooks/${hook}/deliveries`),
          (reply) => reply.body.items.filter((d: any) => d.status === "pending").length === 2 || undefined
        )
      )
      assert.strictEqual(receiver.received.length, 3)
      const rotated = yield* api("POST", `/v1/webhooks/${hook}/rotate-secret`)
      yield* api("PATCH", `/v1/webhooks/${hook}`, { json: { enabled: true } })
      yield* eventually(Effect.sync(() => receiver.received.length >= 5 ? true : undefined))
      const fresh = new Webhook(rotated.body.secret)
      for (const delivery of receiver.received.slice(3)) fresh.verify(delivery.body, delivery.headers)
      assert.sameMembers(typesOf(receiver).slice(3), ["machine.stopped", "operation.succeeded"])

      // Deleting the endpoint deletes its deliveries.
      assert.strictEqual((yield* api("DELETE", `/v1/webhooks/${hook}`)).status, 204)
      const db = new (yield* Effect.promise(() => import("better-sqlite3"))).default(server.config.databaseFile)
      assert.strictEqual((db.prepare("SELECT count(*) AS n FROM webhook_deliveries").get() as any).n, 0)
      db.close()
    }))

  it.scopedLive(
    "a receiver that hangs does not slow the others; failures are retried with the same webhook-id",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer({ secretKeys })
        const owner = yield* server.bootstrap("hang@example.com")
        const api = client(server.url, { key: owner.api_key })
        const hanging = yield* httpReceiver("hang")
        const failing = yield* httpReceiver(500)
        const healthy = yield* httpReceiver()
        // Disabled while the events are made, so that the hanging receiver's attempts start just
        // before the others' and no wait on machine creation comes between them.
        const hooks: Array<string> = []
        for (const receiver of [hanging, failing, healthy]) {
          const made = yield* api("POST", "/v1/webhooks", {
            json: { name: "r", url: receiver.url, events: ["machine.created"], enabled: false }
          })
          hooks.push(made.body.webhook.id)
        }
        const creates: Array<string> = []
        for (let i = 0; i < 40; i++) {
          const accepted = yield* api("POST", "/v1/machines", { json: { name: `m${i}`, start: false } })
          assert.strictEqual(accepted.status, 202)
          creates.push(accepted.body.operation_id)
        }
        // Every event is made (each machine has its disk) before any receiver hears of one.
        for (const operation of creates) yield* settled(api, operation, 180_000)
        yield* api("PATCH", `/v1/webhooks/${hooks[0]}`, { json: { enabled: true } })
        yield* eventually(Effect.sync(() => hanging.received.length >= perEndpoint ? true : undefined))
        for (const hook of hooks.slice(1)) yield* api("PATCH", `/v1/webhooks/${hook}`, { json: { enabled: true } })
        yield* eventually(Effect.sync(() => healthy.received.length >= 40 ? true : undefined))
        // The hanging lane still holds its first attempts: the end of any one starts the next of its
        // 24 waiting deliveries at once, so it would have received more than its lane's width.
        assert.strictEqual(hanging.received.length, perEndpoint)
        // The failing receiver got each event once; its retry comes after 5 s with the same id.
        yield* eventually(Effect.sync(() => failing.received.length >= 40 ? true : undefined))
        const firstIds = new Set(failing.received.map((r) => r.headers["webhook-id"]))
        assert.strictEqual(firstIds.size, 40)
        failing.mode = 200
        yield* eventually(Effect.sync(() => failing.received.length >= 80 ? true : undefined), 30_000)
        for (const retry of failing.received.slice(40)) assert.isTrue(firstIds.has(retry.headers["webhook-id"]))
      }),
    300_000
  )
})
