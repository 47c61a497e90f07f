/** The headers that cross the port proxy (src/ports/MachineHeaders.ts) and `SVC_PORTS_URL` names. */
import { assert, describe, it } from "@effect/vitest"
import { portHostMatcher, portsUrlProblem, portUrl } from "../../src/kernel/domain/Ports.js"
import {
  formatAnswerHead,
  parseAnswerHead,
  requestHeadersForMachine,
  responseHeadersFromMachine,
  SANDBOX_POLICY
} from "../../src/ports/MachineHeaders.js"

const id = "0190a5b2-1c3d-7e4f-8a9b-0c1d2e3f4a5b"

describe("machine headers", () => {
  it("a request loses svc's cookies, key and headers, and keeps the app's", () => {
    const headers = requestHeadersForMachine({
      cookie: "svc_session=s; theme=dark; svc_csrf=c; SVC_port_token=t; app=1",
      authorization: "Bearer svc_abcdefgh_xyz",
      "x-csrf-token": "c",
      "x-organization-id": "o",
      "x-svc-operator-token": "op",
      "x-svc-port-token": "pt",
      connection: "keep-alive",
      accept: "text/html"
    }, false)
    assert.deepStrictEqual(headers, { cookie: "theme=dark; app=1", accept: "text/html" })
    assert.deepStrictEqual(requestHeadersForMachine({ cookie: "svc_session=s", authorization: "Basic eDp5" }, false), {
      authorization: "Basic eDp5"
    })
  })

  it("an answer on svc's origin loses what acts on the origin and is sandboxed next to its own policy", () => {
    const headers = responseHeadersFromMachine({
      "set-cookie": ["svc_session=x; Path=/"],
      "clear-site-data": "\"*\"",
      "strict-transport-security": "max-age=1",
      "alt-svc": "h3=\":443\"",
      "service-worker-allowed": "/",
      nel: "{}",
      "report-to": "{}",
      "accept-ch": "Sec-CH-UA",
      "content-security-policy": "img-src 'none'",
      "transfer-encoding": "chunked",
      "content-type": "text/html"
    }, "svc")
    assert.deepStrictEqual(headers, {
      "content-security-policy": ["img-src 'none'", SANDBOX_POLICY],
      "content-type": "text/html"
    })
    assert.notInclude(SANDBOX_POLICY, "allow-same-origin")
    assert.notInclude(SANDBOX_POLICY, "allow-top-navigation")
    assert.deepStrictEqual(responseHeadersFromMachine({}, "svc"), { "content-security-policy": SANDBOX_POLICY })
  })

  it("an answer on its own origin keeps its headers, cookies host-only", () => {
    const headers = responseHeadersFromMachine({
      "set-cookie": ["a=1; Domain=example.com; Path=/", "b=2;domain=.ports.example.com"],
      "strict-transport-security": "max-age=1"
    }, "own")
    assert.deepStrictEqual(headers, {
      "set-cookie": ["a=1; Path=/", "b=2"],
      "strict-transport-security": "max-age=1"
    })
  })

  it("an upgrade's answer head is parsed, filtered and written back", () => {
    const parsed = parseAnswerHead(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSet-Cookie: svc_session=x"
    )
    assert.isDefined(parsed)
    const headers = responseHeadersFromMachine(parsed!.headers, "svc", true)
    assert.strictEqual(
      formatAnswerHead(parsed!.statusLine, headers),
      `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\ncontent-security-policy: ${SANDBOX_POLICY}\r\n\r\n`
    )
    assert.isUndefined(parseAnswerHead("garbage\r\nx: y"))
    assert.isUndefined(parseAnswerHead("HTTP/1.1 101 OK\r\nno colon here"))
  })
})

describe("SVC_PORTS_URL", () => {
  it("a template names each port's origin, and a Host names the port back", () => {
    const template = "https://{port}-{machine}.ports.example.com"
    assert.isUndefined(portsUrlProblem(template))
    assert.isUndefined(portsUrlProblem("http://{machine}-{port}.localhost:8080/"))
    assert.strictEqual(
      portUrl({ baseUrl: "https://svc.example.com", portsUrl: template }, id, 3000),
      `https://3000-${id}.ports.example.com/`
    )
    assert.strictEqual(
      portUrl({ baseUrl: "https://svc.example.com" }, id, 3000),
      `https://svc.example.com/v1/machines/${id}/ports/3000/http/`
    )
    const match = portHostMatcher(template)
    assert.deepStrictEqual(match(`3000-${id}.PORTS.example.com`), { machineId: id, port: 3000 })
    assert.isUndefined(match(`3000-${id}.ports.example.com.evil.test`))
    assert.isUndefined(match(`70000-${id}.ports.example.com`))
    assert.isUndefined(match("svc.example.com"))
    assert.isUndefined(match(undefined))
    assert.deepStrictEqual(portHostMatcher("http://{machine}-{port}.localhost:8080")(`${id}-80.localhost:8080`), {
      machineId: id,
      port: 80
    })
    for (
      const wrong of [
        "ports.example.com",
        "https://ports.example.com",
        "https://{port}.example.com",
        "ftp://{port}-{machine}.x",
        "https://{port}-{machine}.x/path",
        "https://{port}{port}-{machine}.x"
      ]
    ) {
      assert.isString(portsUrlProblem(wrong), wrong)
    }
  })
})
