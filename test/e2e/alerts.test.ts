/**
 * E-mail alerts end to end: a real server mailing through a real SMTP server on loopback. A failed
 * operation mails its requester with RFC 8058 headers; the link's GET page changes nothing; a form
 * post (Accept: text/html) answers a page and turns the type off; a one-click post answers JSON; an
 * altered or missing token answers 400 and changes nothing; preferences are the member's own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import { client } from "../support/Http.js"
import { change, eventually, realSleep, runningMachine } from "../support/Machines.js"
import { headerOf, smtpServer } from "../support/Smtp.js"
import { startServer } from "../support/TestServer.js"

const secretKeys = { kind: "given" as const, keys: [Redacted.make(NodeCrypto.randomBytes(32))] }

/** A file read of a folder: an operation that fails (not_a_file) on a running machine. */
const failingRead = (api: ReturnType<typeof client>, machineId: string) =>
  change(api, "POST", `/v1/machines/${machineId}/files/read`, { ranges: [{ path: "/" }] })

const setup = Effect.gen(function*() {
  const smtp = yield* smtpServer
  const server = yield* startServer({ secretKeys, mail: { kind: "smtp", url: Redacted.make(smtp.url) } })
  const boot = yield* server.bootstrap("alerts@example.com")
  const api = client(server.url, { key: boot.api_key })
  return { smtp, server, boot, api }
})

const linkOf = (data: string) => {
  const header = headerOf(data, "List-Unsubscribe")!
  return /^<(.+)>$/.exec(header.replace(/\s+/g, ""))![1]!
}

const enabledOf = (api: ReturnType<typeof client>, type: string) =>
  Effect.map(
    api("GET", "/v1/notifications/preferences"),
    (reply) => reply.body.alerts.find((a: { type: string }) => a.type === type).enabled as boolean
  )

describe("e-mail alerts", () => {
  it.scopedLive(
    "a failed operation mails its requester; unsubscribe by page, form and one-click",
    () =>
      Effect.gen(function*() {
        const { api, boot, smtp } = yield* setup
        const preferences = (yield* api("GET", "/v1/notifications/preferences")).body
        assert.strictEqual(preferences.email, "alerts@example.com")
        assert.strictEqual(preferences.user_id, boot.user_id)
        assert.deepStrictEqual(
          preferences.alerts.map((a: any) => [a.type, a.available, a.enabled, a.default_enabled, a.customized]),
          [
            ["operation_failed", true, true, true, false],
            ["machine_stop_failed", true, true, true, false],
            ["auto_stop", true, false, false, false],
            ["abuse_stop", true, true, true, false],
            ["billing_exhausted", false, false, true, false],
            ["trial_ending", false, false, true, false]
          ]
        )

        const machineId = yield* runningMachine(api, "alerted")
        const failed = yield* failingRead(api, machineId)
        assert.strictEqual(failed.status, "failed")
        const mail = yield* eventually(Effect.sync(() => smtp.received[0]))
        assert.deepStrictEqual(mail.to, ["alerts@example.com"])
        assert.strictEqual(headerOf(mail.data, "List-Unsubscribe-Post"), "List-Unsubscribe=One-Click")
        assert.include(mail.data.replace(/=\r?\n/g, ""), failed.id)
        const link = linkOf(mail.data)
        const path = link.slice(link.indexOf("/v1/"))
        assert.match(path, /^\/v1\/notifications\/unsubscribe\?token=/)

        // The GET page changes nothing; its form posts the same URL.
        const page = yield* api("GET", path, { headers: { authorization: "" } })
        assert.strictEqual(page.status, 200)
        assert.match(page.headers.get("content-type")!, /^text\/html/)
        assert.include(page.text, "<form method=\"post\"")
        assert.include(page.text, "operation_failed")
        assert.isTrue(yield* enabledOf(api, "operation_failed"))

        // An altered token, and none at all: 400, nothing changes.
        const token = decodeURIComponent(path.split("token=")[1]!)
        const altered = token.slice(0, -2) + (token.endsWith("AA") ? "BB" : "AA")
        for (const bad of [`?token=${encodeURIComponent(altered)}`, "", "?token=", "?token=a.b"]) {
          for (const method of ["GET", "POST"]) {
            const refused = yield* api(method, `/v1/notifications/unsubscribe${bad}`, {
              headers: { authorization: "" }
            })
            assert.strictEqual(refused.status, 400, `${method} ${bad}`)
            assert.strictEqual(refused.body.code, "invalid_token")
          }
        }
        assert.isTrue(yield* enabledOf(api, "operation_failed"))

        // The browser's form post: no session, a page in answer.
        const form = yield* api("POST", path, {
          headers: {
            authorization: "",
            accept: "text/html,application/xhtml+xml",
            "content-type": "application/x-www-form-urlencoded"
          },
          body: "List-Unsubscribe=One-Click"
        })
        assert.strictEqual(form.status, 200)
        assert.match(form.headers.get("content-type")!, /^text\/html/)
        assert.include(form.text, "unsubscribed")
        assert.isFalse(yield* enabledOf(api, "operation_failed"))

        // Off: the next failure is not mailed. On again: the one after is.
        const unmailed = yield* failingRead(api, machineId)
        const back = yield* api("PUT", "/v1/notifications/preferences", {
          json: { alerts: { operation_failed: true } }
        })
        assert.strictEqual(back.status, 200)
        assert.isTrue(back.body.alerts.find((a: any) => a.type === "operation_failed").customized)
        const other = yield* runningMachine(api, "other")
        const mailed = yield* failingRead(api, other)
        const second = yield* eventually(Effect.sync(() => smtp.received[1]))
        const text = second.data.replace(/=\r?\n/g, "")
        assert.include(text, mailed.id)
        assert.notInclude(text, unmailed.id)
        yield* realSleep(500)
        assert.strictEqual(smtp.received.length, 2)

        // The mail client's one-click post (RFC 8058): JSON, and repeating it is harmless.
        const secondPath = linkOf(second.data).slice(linkOf(second.data).indexOf("/v1/"))
        for (let i = 0; i < 2; i++) {
          const oneClick = yield* api("POST", secondPath, {
            headers: { authorization: "", "content-type": "application/x-www-form-urlencoded" },
            body: "List-Unsubscribe=One-Click"
          })
          assert.strictEqual(oneClick.status, 200)
          assert.deepStrictEqual(oneClick.body, {
            organization_id: boot.organization_id,
            type: "operation_failed",
            enabled: false
          })
        }
        assert.isFalse(yield* enabledOf(api, "operation_failed"))
      }),
    { timeout: 120_000 }
  )

  it.scopedLive("preferences: unknown types and bad bodies are refused and change nothing", () =>
    Effect.gen(function*() {
      const { api } = yield* setup
      const before = (yield* api("GET", "/v1/notifications/preferences")).body
      for (
        const json of [
          { alerts: { no_such_alert: false } },
          { alerts: { auto_stop: true, nope: true } },
          { alerts: { auto_stop: "yes" } },
          { alerts: [] },
          {},
          { alerts: {}, extra: 1 }
        ]
      ) {
        const refused = yield* api("PUT", "/v1/notifications/preferences", { json })
        assert.strictEqual(refused.status, 422, JSON.stringify(json))
      }
      assert.deepStrictEqual((yield* api("GET", "/v1/notifications/preferences")).body, before)
      const set = yield* api("PUT", "/v1/notifications/preferences", { json: { alerts: { auto_stop: true } } })
      assert.isTrue(set.body.alerts.find((a: any) => a.type === "auto_stop").enabled)
      assert.isTrue(set.body.alerts.find((a: any) => a.type === "operation_failed").enabled)
    }))

  it.scopedLive("with mail off every type is unavailable and off", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ secretKeys, mail: { kind: "off" } })
      const boot = yield* server.bootstrap("off@example.com")
      const api = client(server.url, { key: boot.api_key })
      const alerts = (yield* api("GET", "/v1/notifications/preferences")).body.alerts
      assert.isTrue(alerts.every((a: any) => a.available === false && a.enabled === false))
    }))
})
