/**
 * Webhook deliveries over TLS under the strict SSRF guard (no `SVC_WEBHOOK_ALLOW_PRIVATE`): the
 * receiver is an HTTPS server in a network namespace on a public address (test/support/
 * PublicReceiver.ts) with a certificate of a CA the test makes. Trusting that CA through
 * `SVC_EXTRA_CA_CERTS` (the config field it fills), svc delivers, signed; trusting another CA, the
 * delivery fails and records the certificate error. The same server on a private address answers
 * the test, yet svc refuses it as a webhook URL.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeHttps from "node:https"
import { Webhook } from "standardwebhooks"
import { client } from "../support/Http.js"
import { eventually } from "../support/Machines.js"
import { publicReceiver } from "../support/PublicReceiver.js"
import { startServer } from "../support/TestServer.js"
import { testCa } from "../support/Tls.js"

const secretKeys = { kind: "given" as const, keys: [Redacted.make(NodeCrypto.randomBytes(32))] }

/** A strict server trusting `extraCaCerts`, its owner's client and an endpoint at `url`. */
const endpointOn = (url: string, extraCaCerts: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const server = yield* startServer({ secretKeys, webhookAllowPrivate: false, extraCaCerts })
    const owner = yield* server.bootstrap("tls-hooks@example.com")
    const api = client(server.url, { key: owner.api_key })
    const made = yield* api("POST", "/v1/webhooks", { json: { name: "tls", url, events: ["machine.created"] } })
    assert.strictEqual(made.status, 201, made.text)
    return { api, hook: made.body.webhook.id as string, secret: made.body.secret as string }
  })

/** Answers whether a TLS client trusting `caPem` gets an answer from `url`. */
const answers = (url: string, caPem: string) =>
  Effect.async<number>((resume) => {
    const request = NodeHttps.request(url, { method: "POST", ca: caPem }, (response) => {
      response.resume()
      resume(Effect.succeed(response.statusCode ?? 0))
    })
    request.on("error", (error) => resume(Effect.die(error)))
    request.end("{}")
  })

describe("webhooks over TLS, strict SSRF guard", () => {
  it.scopedLive(
    "delivered to a public address with the CA trusted; a certificate error recorded with another CA; a LAN host refused",
    () =>
      Effect.gen(function*() {
        const ca = yield* testCa()
        const other = yield* testCa("another CA")
        const receiver = yield* publicReceiver(ca)

        const trusting = yield* endpointOn(receiver.url, [ca.caPem])
        const created = yield* trusting.api("POST", "/v1/machines", { json: { name: "tls", start: false } })
        assert.strictEqual(created.status, 202)
        const delivery = yield* eventually(Effect.sync(() => receiver.received[0]), 60_000)
        const payload = new Webhook(trusting.secret).verify(delivery.body, delivery.headers) as any
        assert.strictEqual(payload.type, "machine.created")
        assert.strictEqual(payload.data.id, created.body.machine_id)

        const wrong = yield* endpointOn(receiver.url, [other.caPem])
        assert.strictEqual(
          (yield* wrong.api("POST", "/v1/machines", { json: { name: "x", start: false } })).status,
          202
        )
        const failed = yield* eventually(
          Effect.map(
            wrong.api("GET", `/v1/webhooks/${wrong.hook}/deliveries`),
            (reply) => reply.body.items.find((item: any) => item.last_error !== null)
          ),
          60_000
        )
        assert.strictEqual(failed.status, "pending", "retried later on the usual schedule")
        assert.isNull(failed.last_status_code)
        assert.match(failed.last_error, /certificate/i)
        assert.strictEqual(receiver.received.length, 1, "nothing reached the receiver without a verified certificate")

        // The LAN address answers (the test trusts the CA), yet it is no webhook URL under the guard.
        assert.strictEqual(yield* answers(`https://${receiver.lanAddress}/hook`, ca.caPem), 200)
        receiver.received.pop()
        for (const url of [`https://${receiver.lanAddress}/hook`, "https://127.0.0.1/hook"]) {
          const refused = yield* trusting.api("POST", "/v1/webhooks", {
            json: { name: "lan", url, events: ["machine.created"] }
          })
          assert.strictEqual(refused.status, 422, url)
          assert.match(refused.body.field_errors[0].message, /not public/)
        }
      }),
    180_000
  )
})
