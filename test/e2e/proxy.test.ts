/**
 * The port proxy end to end (extensions.md §5): a real HTTP server inside a real sandbox, reached
 * through svc's own listener on loopback, for machines without internet and with it (both in a
 * network namespace of their own, reached through nsenter). Live clock; each test boots a
 * sandbox, so each gets minutes on a loaded host.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeHttp from "node:http"
import type * as NodeNet from "node:net"
import { client } from "../support/Http.js"
import { change, eventually, runningMachine, sh } from "../support/Machines.js"
import { signIn } from "../support/SignIn.js"
import { startServer } from "../support/TestServer.js"

const setup = Effect.gen(function*() {
  const server = yield* startServer({ runtime: "sandbox" })
  const owner = yield* server.bootstrap("owner@example.com")
  return { server, owner, api: client(server.url, { key: owner.api_key }) }
})

/** Echoes each request as JSON (201), streams `/stream` in two parts, and echoes upgraded bytes. */
const app = `const http = require("http");
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    if (req.url === "/stream") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("one\\n");
      return setTimeout(() => res.end("two\\n"), 100);
    }
    res.writeHead(201, {
      "content-type": "application/json",
      "set-cookie": "svc_session=planted; Path=/",
      "clear-site-data": '"cookies"',
      "strict-transport-security": "max-age=31536000",
      "alt-svc": 'h2=":443"',
      "service-worker-allowed": "/",
      "content-security-policy": "img-src 'self'",
      "x-app": "kept"
    });
    res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() }));
  });
});
server.on("upgrade", (req, socket, head) => {
  socket.write("HTTP/1.1 101 Switching Protocols\\r\\nupgrade: echo\\r\\nconnection: Upgrade\\r\\nset-cookie: svc_session=planted\\r\\n\\r\\n");
  if (head.length > 0) socket.write(head);
  socket.pipe(socket);
});
server.listen(Number(process.argv[2]), "127.0.0.1");
`

const randomPort = () => 20_000 + Math.floor(Math.random() * 40_000)

/** Starts the app in the machine on `port` and waits until the proxy reaches it. */
const startApp = (api: ReturnType<typeof client>, id: string, port: number, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    assert.strictEqual(decodeOut(yield* sh(api, id, "command -v node")), "/usr/bin/node\n")
    const started = yield* sh(
      api,
      id,
      `cat > /tmp/app.js <<'EOF'\n${app}EOF\nnohup node /tmp/app.js ${port} >/dev/null 2>&1 &`
    )
    assert.strictEqual(started.exec_result.exit_code, 0)
    yield* eventually(
      Effect.map(
        api("GET", `/v1/machines/${id}/ports/${port}/http/`, { headers }),
        (reply) => reply.status === 201 ? reply : undefined
      )
    )
  })

const decodeOut = (operation: any) => Buffer.from(operation.exec_result.stdout_base64, "base64").toString()

/** Sends an upgrade request and answers the status line and what the upgraded connection echoes. */
const upgradeEcho = (url: string, headers: Record<string, string> = {}) =>
  Effect.async<{ status: number; echoed?: string; cookie?: ReadonlyArray<string> | undefined }>((resume) => {
    const request = NodeHttp.request(url, { headers: { connection: "Upgrade", upgrade: "echo", ...headers } })
    request.on("upgrade", (response, socket: NodeNet.Socket) => {
      socket.once("data", (chunk) => {
        socket.destroy()
        const cookie = response.headers["set-cookie"]
        resume(Effect.succeed({ status: response.statusCode!, echoed: chunk.toString(), cookie }))
      })
      socket.write("hello through the proxy")
    })
    request.on("response", (response) => {
      response.resume()
      resume(Effect.succeed({ status: response.statusCode! }))
    })
    request.on("error", (error) => resume(Effect.die(error)))
    request.end()
  })

describe("port proxy", () => {
  it.scopedLive(
    "a public port of a machine without internet: any method, body, path, streaming, upgrades",
    () =>
      Effect.gen(function*() {
        const { api, server } = yield* setup
        const id = yield* runningMachine(api, "public-app", { internet_access: false })
        const port = randomPort()
        yield* change(api, "POST", `/v1/machines/${id}/ports`, { port, public: true })
        yield* startApp(api, id, port)
        const anyone = client(server.url)
        const base = `/v1/machines/${id}/ports/${port}/http`

        const got = yield* anyone("GET", `${base}/some/path?x=1&y=2`)
        assert.strictEqual(got.status, 201)
        assert.strictEqual(got.body.method, "GET")
        assert.strictEqual(got.body.url, "/some/path?x=1&y=2")
        assert.strictEqual(got.body.headers["x-forwarded-prefix"], base)
        // Nothing of the machine's answer acts on svc's origin, and its own policy stays next to the sandbox.
        for (const name of ["set-cookie", "clear-site-data", "strict-transport-security", "alt-svc"]) {
          assert.isNull(got.headers.get(name), name)
        }
        assert.isNull(got.headers.get("service-worker-allowed"))
        assert.strictEqual(got.headers.get("x-app"), "kept")
        const policy = got.headers.get("content-security-policy") ?? ""
        assert.include(policy, "img-src 'self'")
        assert.match(policy, /sandbox allow-scripts/)
        assert.notInclude(policy, "allow-same-origin")

        const withKey = yield* anyone("GET", `${base}/k`, { headers: { authorization: "Bearer svc_abcdefgh_x" } })
        assert.isUndefined(withKey.body.headers.authorization, "an svc key never reaches the machine")
        const appBearer = yield* anyone("GET", `${base}/k`, { headers: { authorization: "Bearer app-token" } })
        assert.strictEqual(appBearer.body.headers.authorization, "Bearer app-token", "the app's own credential does")

        const posted = yield* anyone("PATCH", `${base}/items`, { body: "a body", headers: { "x-custom": "kept" } })
        assert.strictEqual(posted.body.method, "PATCH")
        assert.strictEqual(posted.body.body, "a body")
        assert.strictEqual(posted.body.headers["x-custom"], "kept")

        const big = "x".repeat(3 * 1024 * 1024)
        assert.strictEqual((yield* anyone("POST", `${base}/big`, { body: big })).body.body.length, big.length)

        const streamed = yield* anyone("GET", `${base}/stream`)
        assert.strictEqual(streamed.text, "one\ntwo\n")

        const bare = yield* anyone("GET", `${base}?q=1`)
        assert.strictEqual(bare.status, 308)
        assert.strictEqual(bare.headers.get("location"), `${base}/?q=1`)

        const upgraded = yield* upgradeEcho(`${server.url}${base}/socket`)
        assert.deepStrictEqual(upgraded, { status: 101, echoed: "hello through the proxy", cookie: undefined })
      }),
    180_000
  )

  it.scopedLive(
    "a private port: a key of the organization, a member's session or a port token; else 404",
    () =>
      Effect.gen(function*() {
        const { api, owner, server } = yield* setup
        const id = yield* runningMachine(api, "private-app")
        const port = randomPort()
        yield* change(api, "POST", `/v1/machines/${id}/ports`, { port })
        const auth = { authorization: `Bearer ${owner.api_key}` }
        yield* startApp(api, id, port, auth)
        const base = `/v1/machines/${id}/ports/${port}/http`
        const anyone = client(server.url)

        const anonymous = yield* anyone("GET", `${base}/`)
        assert.strictEqual(anonymous.status, 404)
        assert.strictEqual(anonymous.body.code, "resource_not_found")
        assert.strictEqual(anonymous.headers.get("content-type"), "application/problem+json")
        const stranger = yield* server.bootstrap("stranger@example.com")
        assert.strictEqual((yield* client(server.url, { key: stranger.api_key })("GET", `${base}/`)).status, 404)
        assert.strictEqual(
          (yield* anyone("GET", `${base}/`, { headers: { authorization: "Bearer nope" } })).status,
          404
        )
        assert.strictEqual((yield* upgradeEcho(`${server.url}${base}/socket`)).status, 404)

        const byKey = yield* api("GET", `${base}/`)
        assert.strictEqual(byKey.status, 201)
        assert.isUndefined(byKey.body.headers.authorization, "svc's key does not reach the machine")
        const readOnly = yield* api("POST", "/v1/api-keys", { json: { name: "viewer", preset: "read_only" } })
        const viewer = client(server.url, { key: readOnly.body.secret })
        assert.strictEqual((yield* viewer("GET", `${base}/`)).status, 201, "any preset has R")
        assert.deepStrictEqual(yield* upgradeEcho(`${server.url}${base}/socket`, auth), {
          status: 101,
          echoed: "hello through the proxy",
          cookie: undefined
        })

        const browser = yield* signIn(server, "owner@example.com")
        const bySession = yield* browser.http("GET", `${base}/`, {
          headers: { cookie: "theme=dark", "x-csrf-token": "mine", "x-svc-operator-token": "op" }
        })
        assert.strictEqual(bySession.status, 201)
        // None of svc's cookies or headers reach the machine.
        assert.notInclude(bySession.body.headers.cookie ?? "", "svc_")
        assert.isUndefined(bySession.body.headers["x-csrf-token"])
        assert.isUndefined(bySession.body.headers["x-svc-operator-token"])
        // A session changes things only from svc's own site: another site's page cannot ride the cookie.
        const crossSite = yield* browser.http("POST", `${base}/items`, {
          body: "x",
          headers: { origin: "https://evil.example", "x-svc-csrf": "irrelevant" }
        })
        assert.strictEqual(crossSite.status, 404)
        const fetchMetadata = yield* browser.http("DELETE", `${base}/items`, {
          headers: { "sec-fetch-site": "cross-site" }
        })
        assert.strictEqual(fetchMetadata.status, 404)
        const sameSite = yield* browser.http("POST", `${base}/items`, { body: "x", headers: { origin: server.url } })
        assert.strictEqual(sameSite.status, 201)
        const crossSiteRead = yield* browser.http("GET", `${base}/`, { headers: { "sec-fetch-site": "cross-site" } })
        assert.strictEqual(crossSiteRead.status, 201, "a link from elsewhere still opens the page")

        const made = yield* api("POST", `/v1/machines/${id}/ports/${port}/tokens`, { json: { expires_in_seconds: 60 } })
        const byHeader = yield* anyone("GET", `${base}/`, { headers: { "x-svc-port-token": made.body.token } })
        assert.strictEqual(byHeader.status, 201)
        assert.isUndefined(byHeader.body.headers["x-svc-port-token"])
        // A query token is moved into a cookie of the port's path, off the address bar.
        const byQuery = yield* anyone("GET", `${base}/page?svc_port_token=${made.body.token}&a=b`)
        assert.strictEqual(byQuery.status, 303)
        assert.strictEqual(byQuery.headers.get("location"), `${base}/page?a=b`)
        const cookie = byQuery.headers.get("set-cookie") ?? ""
        assert.strictEqual(cookie, `svc_port_token=${made.body.token}; Path=${base}/; HttpOnly; SameSite=Lax`)
        const byCookie = yield* anyone("GET", `${base}/page?a=b`, {
          headers: { cookie: `svc_port_token=${made.body.token}; theme=dark` }
        })
        assert.strictEqual(byCookie.status, 201)
        assert.strictEqual(byCookie.body.url, "/page?a=b")
        assert.strictEqual(byCookie.body.headers.cookie, "theme=dark", "the token cookie does not reach the machine")
        const postByQuery = yield* anyone("POST", `${base}/form?svc_port_token=${made.body.token}`, { body: "x" })
        assert.strictEqual(postByQuery.status, 201)
        assert.strictEqual(postByQuery.body.url, "/form")
        const otherPort = yield* api("POST", `/v1/machines/${id}/ports`, { json: { port: port + 1 } })
        assert.strictEqual(otherPort.status, 202)
        yield* eventually(
          Effect.map(api("GET", `/v1/machines/${id}`), (r) => r.body.ports.length === 2 ? true : undefined)
        )
        const wrongPort = yield* anyone(
          "GET",
          `/v1/machines/${id}/ports/${port + 1}/http/?svc_port_token=${made.body.token}`
        )
        assert.strictEqual(wrongPort.status, 404, "a token opens its own port only")
      }),
    180_000
  )

  it.scopedLive(
    "a port that is not exposed is 404; nothing listening or a stopped machine is 502",
    () =>
      Effect.gen(function*() {
        const { api } = yield* setup
        const id = yield* runningMachine(api, "quiet", { internet_access: false })
        const port = randomPort()
        const notExposed = yield* api("GET", `/v1/machines/${id}/ports/${port}/http/`)
        assert.strictEqual(notExposed.status, 404)
        assert.strictEqual(notExposed.body.code, "resource_not_found")
        assert.strictEqual(
          (yield* api("GET", `/v1/machines/00000000-0000-4000-8000-000000000000/ports/80/http/`)).status,
          404
        )

        yield* change(api, "POST", `/v1/machines/${id}/ports`, { port })
        const nothing = yield* api("GET", `/v1/machines/${id}/ports/${port}/http/`)
        assert.strictEqual(nothing.status, 502)
        assert.strictEqual(nothing.body.code, "guest_action_failed")
        yield* change(api, "POST", `/v1/machines/${id}/stop`, {})
        const stopped = yield* api("GET", `/v1/machines/${id}/ports/${port}/http/`)
        assert.strictEqual(stopped.status, 502)
        assert.strictEqual(stopped.body.code, "guest_action_failed")
        // The API next to the proxy is untouched.
        assert.strictEqual((yield* api("GET", `/v1/machines/${id}`)).body.state, "stopped")
      }),
    180_000
  )

  it.scopedLive(
    "a machine with internet access reaches only ports its own processes serve, not the host's",
    () =>
      Effect.gen(function*() {
        const { api, server } = yield* setup
        const id = yield* runningMachine(api, "shared", { internet_access: true })
        // svc itself listens on the host's loopback: exposing its port must not open a door to it.
        yield* change(api, "POST", `/v1/machines/${id}/ports`, { port: server.config.port, public: true })
        const host = yield* client(server.url)(
          "GET",
          `/v1/machines/${id}/ports/${server.config.port}/http/v1/auth/providers`
        )
        assert.strictEqual(host.status, 502)
        assert.strictEqual(host.body.code, "guest_action_failed")
        const port = randomPort()
        yield* change(api, "POST", `/v1/machines/${id}/ports`, { port })
        yield* startApp(api, id, port)
        assert.strictEqual((yield* api("GET", `/v1/machines/${id}/ports/${port}/http/hello`)).status, 201)
      }),
    180_000
  )
})

/** A GET with a Host header of its own (fetch cannot set one), answered as status, headers and JSON. */
const getWithHost = (url: string, host: string) =>
  Effect.async<{ status: number; headers: NodeHttp.IncomingHttpHeaders; body: any }>((resume) => {
    const request = NodeHttp.request(url, { headers: { host } }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString()
        let body: unknown = text
        try {
          body = JSON.parse(text)
        } catch {
          // not JSON: kept as text
        }
        resume(Effect.succeed({ status: response.statusCode!, headers: response.headers, body }))
      })
    })
    request.on("error", (error) => resume(Effect.die(error)))
    request.end()
  })

describe("port proxy on origins of their own (SVC_PORTS_URL)", () => {
  it.scopedLive(
    "a port is served by its Host name, unsandboxed but with host-only cookies; ports[].url names it",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer({ runtime: "sandbox", portsUrl: "http://{port}-{machine}.ports.test" })
        const owner = yield* server.bootstrap("owner@example.com")
        const api = client(server.url, { key: owner.api_key })
        const id = yield* runningMachine(api, "own-origin", { internet_access: false })
        const port = randomPort()
        yield* change(api, "POST", `/v1/machines/${id}/ports`, { port, public: true })
        yield* startApp(api, id, port)
        const machine = yield* api("GET", `/v1/machines/${id}`)
        assert.strictEqual(machine.body.ports[0].url, `http://${port}-${id}.ports.test/`)

        const host = `${port}-${id}.ports.test`
        const got = yield* getWithHost(`${server.url}/any/path?x=1`, host)
        assert.strictEqual(got.status, 201)
        assert.strictEqual(got.body.url, "/any/path?x=1")
        assert.isUndefined(got.body.headers["x-forwarded-prefix"])
        assert.deepStrictEqual(got.headers["set-cookie"], ["svc_session=planted; Path=/"], "its own origin's cookie")
        assert.strictEqual(got.headers["content-security-policy"], "img-src 'self'", "no sandbox on its own origin")
        // svc's API is not on a port's origin: every path there is the machine's.
        const apiPath = yield* getWithHost(`${server.url}/v1/machines`, host)
        assert.strictEqual(apiPath.status, 201)
        assert.strictEqual(apiPath.body.url, "/v1/machines")
        // Another host is svc's, and the path under svc's origin still works, sandboxed.
        assert.strictEqual(
          (yield* getWithHost(`${server.url}/v1/machines`, `${port}-${id}.elsewhere.test`)).status,
          401
        )
        const underBase = yield* client(server.url)("GET", `/v1/machines/${id}/ports/${port}/http/`)
        assert.strictEqual(underBase.status, 201)
        assert.match(underBase.headers.get("content-security-policy") ?? "", /sandbox/)
      }),
    180_000
  )
})
