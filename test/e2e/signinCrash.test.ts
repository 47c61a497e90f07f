/**
 * What the sign-in flows accept survives kill -9 of `svc serve`: a device approval answered 200 is
 * honoured by the restarted server (the key once), a denial stays denied, a session stays signed in,
 * and a linking code mailed before the kill still links after it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodePath from "node:path"
import { readOutbox } from "../../src/kernel/mail/Outbox.js"
import { kill, serve } from "../support/Binary.js"
import { client, CookieJar } from "../support/Http.js"
import { codeFrom } from "../support/SignIn.js"
import { freePort, tempDir } from "../support/TestServer.js"

const grantType = "urn:ietf:params:oauth:grant-type:device_code"

describe("sign-in across kill -9", () => {
  it.scopedLive("approvals, denials, sessions and linking codes outlive a SIGKILL", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const port = yield* freePort
      // Process driver: no machine in this test, and svc starts without the sandbox's host probes.
      const env = { SVC_DATA_DIR: dataDir, SVC_PORT: String(port), SVC_RUNTIME: "process", SVC_SIGNUP: "open" }
      const url = `http://127.0.0.1:${port}`
      const mailTo = (email: string) =>
        Effect.map(readOutbox(NodePath.join(dataDir, "outbox")), (messages) =>
          messages.filter((message) => message.to === email).at(-1)!.text)

      const first = yield* serve(env)
      const jar = new CookieJar()
      const http = client(url, { jar })
      yield* http("POST", "/v1/auth/email/start", { json: { email: "ada@example.com" } })
      const code = codeFrom(yield* mailTo("ada@example.com"))
      assert.strictEqual(
        (yield* http("POST", "/v1/auth/email/verify", { json: { email: "ada@example.com", code } })).status,
        200
      )
      const csrf = { "x-csrf-token": jar.get("svc_csrf")! }
      const organizationId = (yield* http("GET", "/v1/me")).body.organizations[0].id
      const org = { ...csrf, "x-organization-id": organizationId }
      const approvedCode = (yield* http("POST", "/v1/auth/device/code", { json: {} })).body
      const deniedCode = (yield* http("POST", "/v1/auth/device/code", { json: {} })).body
      yield* http("POST", "/v1/auth/link/email", { json: { email: "ada.work@example.com" }, headers: csrf })
      assert.strictEqual(
        (yield* http("POST", "/v1/auth/device/approve", { json: { user_code: approvedCode.user_code }, headers: org }))
          .status,
        200
      )
      assert.strictEqual(
        (yield* http("POST", "/v1/auth/device/deny", { json: { user_code: deniedCode.user_code }, headers: org }))
          .status,
        204
      )
      yield* kill(first)

      yield* serve(env)
      const poll = (deviceCode: string) =>
        http("POST", "/v1/auth/device/token", { json: { device_code: deviceCode, grant_type: grantType } })
      const issued = yield* poll(approvedCode.device_code)
      assert.strictEqual(issued.status, 200, issued.text)
      assert.strictEqual(issued.body.api_key.organization_id, organizationId)
      assert.strictEqual((yield* poll(deniedCode.device_code)).body.error, "access_denied")
      assert.strictEqual((yield* http("GET", "/v1/me")).body.user.email, "ada@example.com")
      const linkCode = /link this address is (\d{6})/.exec(yield* mailTo("ada.work@example.com"))![1]
      const linked = yield* http("POST", "/v1/auth/email/verify", {
        json: { email: "ada.work@example.com", code: linkCode },
        headers: csrf
      })
      assert.strictEqual(linked.status, 200, linked.text)
    }), { timeout: 120_000 })
})
