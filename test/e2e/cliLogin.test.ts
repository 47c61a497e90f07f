/**
 * `svc login` and `svc logout`: end to end against the real device routes, approved by a signed-in
 * person's session; and the poll's pacing (`slow_down`) and a denial, answered on cue by a loopback
 * server in front of a real svc that speaks the published device routes (every other request goes
 * to the real svc, so the stored key is then used for real).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { makeClient } from "../../src/index.js"
import { cliFor, frontServer, runCli } from "../support/Cli.js"
import { signIn } from "../support/SignIn.js"
import { startServer } from "../support/TestServer.js"

interface Poll {
  readonly at: number
  readonly body: any
}

/** The device routes as published, answering the token polls from `answers` in turn; the rest goes to `upstream`. */
const deviceServer = (upstream: string, answers: ReadonlyArray<{ status: number; body: unknown }>) =>
  Effect.gen(function*() {
    const polls: Array<Poll> = []
    const codeRequests: Array<any> = []
    let url = ""
    const front = yield* frontServer(upstream, (request, body, reply): void | false => {
      if (request.method === "POST" && request.url === "/v1/auth/device/code") {
        codeRequests.push(JSON.parse(body.toString() || "{}"))
        return reply(200, {
          device_code: "device-code-1",
          user_code: "BCDF-GHJK",
          verification_uri: `${url}/device`,
          verification_uri_complete: `${url}/device?user_code=BCDF-GHJK`,
          expires_in: 600,
          interval: 1
        })
      }
      if (request.method === "POST" && request.url === "/v1/auth/device/token") {
        polls.push({ at: Date.now(), body: JSON.parse(body.toString()) })
        const answer = answers[Math.min(polls.length, answers.length) - 1]!
        return reply(answer.status, answer.body)
      }
      return false
    })
    url = front.url
    return { url, polls, codeRequests }
  })

const pending = { status: 400, body: { error: "authorization_pending", error_description: "not yet" } }

describe("svc CLI: login and logout", () => {
  it.scopedLive(
    "login shows the code, polls at the interval plus 5 s after slow_down, stores the key 0600; logout revokes it",
    () =>
      Effect.gen(function*() {
        const real = yield* startServer()
        const owner = yield* real.bootstrap("login@example.com")
        const admin = yield* makeClient({ baseUrl: real.url, apiKey: owner.api_key })
        const key = (yield* admin.apiKeys.list()).items[0]!
        const device = yield* deviceServer(real.url, [
          pending,
          { status: 400, body: { error: "slow_down", error_description: "slow down" } },
          pending,
          {
            status: 200,
            body: {
              access_token: owner.api_key,
              token_type: "Bearer",
              expires_in: 7776000,
              scope: key.preset,
              api_key: key
            }
          }
        ])
        const cli = yield* cliFor(device.url, undefined)
        const env = { SVC_URL: undefined, SVC_API_KEY: undefined }
        const login = yield* cli.run(["login", "--url", device.url], { env })
        assert.strictEqual(login.code, 0, login.stderr)
        assert.include(login.stderr, `open ${device.url}/device and enter the code\n\n    BCDF-GHJK\n`)
        assert.include(login.stderr, `${device.url}/device?user_code=BCDF-GHJK`)
        assert.match(login.stdout, new RegExp(`^Signed in to ${device.url} \\(organization ${owner.organization_id}`))
        assert.deepStrictEqual(device.codeRequests, [{}])
        assert.deepStrictEqual(
          device.polls.map((p) => p.body),
          Array(4).fill({
            device_code: "device-code-1",
            grant_type: "urn:ietf:params:oauth:grant-type:device_code"
          })
        )
        const gaps = device.polls.slice(1).map((p, i) => p.at - device.polls[i]!.at)
        assert.isAtLeast(gaps[0]!, 950, `gaps ${gaps}`)
        // After slow_down the interval is 1 + 5 s, and stays there.
        assert.isAtLeast(gaps[1]!, 5_950, `gaps ${gaps}`)
        assert.isAtLeast(gaps[2]!, 5_950, `gaps ${gaps}`)

        const file = NodePath.join(cli.configHome, "svc", "config.json")
        assert.strictEqual(NodeFs.statSync(file).mode & 0o777, 0o600)
        assert.strictEqual(NodeFs.statSync(NodePath.dirname(file)).mode & 0o777, 0o700)
        assert.deepStrictEqual(JSON.parse(NodeFs.readFileSync(file, "utf8")), {
          url: device.url,
          api_key: owner.api_key,
          api_key_id: key.id
        })
        // The stored URL and key serve the next commands.
        const listed = yield* cli.run(["machines", "list", "--json"], { env })
        assert.strictEqual(listed.code, 0, listed.stderr)
        assert.deepStrictEqual(JSON.parse(listed.stdout), [])

        const logout = yield* cli.run(["logout"], { env })
        assert.strictEqual(logout.code, 0, logout.stderr)
        assert.strictEqual(logout.stderr, "the key was revoked\n")
        assert.isFalse(NodeFs.existsSync(file))
        const revoked = yield* cli.run(["machines", "list"], { env: { SVC_URL: real.url, SVC_API_KEY: owner.api_key } })
        assert.strictEqual(revoked.code, 1)
        assert.match(revoked.stderr, /^svc: error invalid_api_key \(401\)/)
        const signedOut = yield* cli.run(["machines", "list"], { env })
        assert.strictEqual(signedOut.code, 2)
      }),
    120_000
  )

  it.scopedLive(
    "a denied code ends the login with exit 1 and its error, storing nothing",
    () =>
      Effect.gen(function*() {
        const real = yield* startServer()
        const device = yield* deviceServer(real.url, [
          pending,
          { status: 400, body: { error: "access_denied", error_description: "The request was denied" } }
        ])
        const cli = yield* cliFor(device.url, undefined)
        const login = yield* cli.run(["login", "--scope", "read_only"], { env: { SVC_API_KEY: undefined } })
        assert.strictEqual(login.code, 1)
        assert.match(login.stderr, /svc: error access_denied \(400\): The request was denied\n$/)
        assert.deepStrictEqual(device.codeRequests, [{ scope: "read_only" }])
        assert.isFalse(NodeFs.existsSync(NodePath.join(cli.configHome, "svc", "config.json")))
      }),
    60_000
  )

  it.scopedLive(
    "login against the real device routes: approved in a session, the key stored and used",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const ada = yield* signIn(server, "ada@example.com")
        const organizationId = (yield* ada.http("GET", "/v1/me")).body.organizations[0].id
        const cli = yield* cliFor(server.url, undefined)
        const env = { SVC_URL: undefined, SVC_API_KEY: undefined }
        const approvals: Array<number> = []
        const login = yield* runCli(["login", "--url", server.url], { ...cli.env, ...env }, {
          started: (child) => {
            let shown = ""
            child.stderr!.on("data", (chunk) => {
              shown += chunk
              const code = /\n {4}([A-Z]{4}-[A-Z]{4})\n/.exec(shown)?.[1]
              if (code === undefined || approvals.length > 0) return
              approvals.push(0)
              void Effect.runPromise(ada.http("POST", "/v1/auth/device/approve", {
                json: { user_code: code, preset: "full_access", name: "cli test" },
                headers: { ...ada.withCsrf, "x-organization-id": organizationId }
              })).then((reply) => approvals.push(reply.status))
            })
          }
        })
        assert.strictEqual(login.code, 0, login.stderr)
        assert.deepStrictEqual(approvals, [0, 200])
        assert.include(login.stderr, `open ${server.url}/device and enter the code`)
        assert.match(
          login.stdout,
          new RegExp(`^Signed in to ${server.url} \\(organization ${organizationId}, key cli test, full_access\\)`)
        )
        const file = NodePath.join(cli.configHome, "svc", "config.json")
        assert.strictEqual(NodeFs.statSync(file).mode & 0o777, 0o600)
        const stored = JSON.parse(NodeFs.readFileSync(file, "utf8"))
        assert.match(stored.api_key, /^svc_/)
        const created = yield* cli.run(["machines", "create", "mine", "--wait"], { env })
        assert.strictEqual(created.code, 0, created.stderr)
        const logout = yield* cli.run(["logout"], { env })
        assert.strictEqual(logout.stderr, "the key was revoked\n")
        const revoked = yield* cli.run(["machines", "list"], {
          env: { SVC_API_KEY: stored.api_key, SVC_URL: server.url }
        })
        assert.strictEqual(revoked.code, 1)
        assert.match(revoked.stderr, /invalid_api_key/)
      }),
    120_000
  )
})
