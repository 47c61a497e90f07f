/**
 * The real binary's log stream (src/cli/Logging.ts, the access line of src/kernel/http/RequestEdge.ts):
 * everything on stderr once, JSON when stderr is not a terminal, the format SVC_LOG_FORMAT asks for,
 * and one access line per request with its method, route pattern, status, duration and correlation id.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import { checkout, run } from "../support/Binary.js"
import { freePort, tempDir } from "../support/TestServer.js"

interface Served {
  readonly stdout: string
  readonly stderr: string
}

/**
 * `svc serve` with `env`; `requests` run once it listens; answers what it printed once stopped. The
 * access line is written once the answer is handed over, so the process is stopped only once the
 * last request's correlation id shows in its output (or after 10 s).
 */
const serveAndStop = (env: Record<string, string>, requests: (url: string) => Promise<void>) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const dataDir = yield* tempDir
    return yield* Effect.async<Served>((resume) => {
      const child = NodeChild.spawn(checkout()[0], [...checkout().slice(1), "serve"], {
        // Process driver: no machine in this test, and svc starts without the sandbox's host probes.
        env: { ...process.env, SVC_DATA_DIR: dataDir, SVC_RUNTIME: "process", SVC_PORT: String(port), ...env }
      })
      let stdout = ""
      let stderr = ""
      let started = false
      child.stdout.on("data", (chunk) => (stdout += chunk))
      child.stderr.on("data", (chunk) => {
        stderr += chunk
        if (!started && stderr.includes("Listening on")) {
          started = true
          const stop = () => child.kill("SIGTERM")
          requests(`http://127.0.0.1:${port}`).then(async () => {
            for (let waited = 0; waited < 10_000 && !stderr.includes("corr-none"); waited += 50) {
              await new Promise((resolve) => setTimeout(resolve, 50))
            }
          }).then(stop, (error) => {
            stderr += `request failed: ${error}\n`
            stop()
          })
        }
      })
      child.on("exit", () => resume(Effect.succeed({ stdout, stderr })))
    })
  })

const machineId = "0190d9a2-0000-7000-8000-000000000001"

/** Three requests: a read without a key, a change on a machine route, and no route at all. */
const threeRequests = async (url: string) => {
  await fetch(`${url}/v1/me`, { headers: { "x-correlation-id": "corr-me" } }).then((r) => r.text())
  await fetch(`${url}/v1/machines/${machineId}/exec?x=1`, {
    method: "POST",
    headers: { "x-correlation-id": "corr-exec", "content-type": "application/json" },
    body: "{}"
  }).then((r) => r.text())
  await fetch(`${url}/nowhere`, { headers: { "x-correlation-id": "corr-none" } }).then((r) => r.text())
}

describe("logs", () => {
  it.scopedLive(
    "by default (stderr not a terminal): JSON lines on stderr, each once, one access line per request",
    () =>
      Effect.gen(function*() {
        const { stderr, stdout } = yield* serveAndStop({}, threeRequests)
        assert.strictEqual(stdout, "")
        const lines = stderr.trim().split("\n")
        const entries = lines.map((line) => JSON.parse(line))
        assert.strictEqual(entries.filter((e) => String(e.message).startsWith("Listening on")).length, 1)
        assert.strictEqual(new Set(lines).size, lines.length, "no line is printed twice")
        const access = entries.filter((e) => e.annotations?.access === true).map((e) => e.annotations)
        assert.deepStrictEqual(
          access.map(({ correlation_id, method, route, status }) => ({ correlation_id, method, route, status })),
          [
            { correlation_id: "corr-me", method: "GET", route: "/v1/me", status: 401 },
            { correlation_id: "corr-exec", method: "POST", route: "/v1/machines/:id/exec", status: 401 },
            { correlation_id: "corr-none", method: "GET", route: "/nowhere", status: 404 }
          ]
        )
        for (const line of access) assert.isTrue(typeof line.duration_ms === "number" && line.duration_ms >= 0)
      }),
    60_000
  )

  it.scopedLive(
    "SVC_LOG_FORMAT=logfmt and pretty; a value it does not know is refused with one line",
    () =>
      Effect.gen(function*() {
        const logfmt = yield* serveAndStop({ SVC_LOG_FORMAT: "logfmt" }, threeRequests)
        const accessLines = logfmt.stderr.split("\n").filter((line) => line.includes("access=true"))
        assert.strictEqual(accessLines.length, 3)
        assert.match(
          accessLines[1]!,
          /level=INFO .*correlation_id=corr-exec .*status=401 method=POST .*route=\/v1\/machines\/:id\/exec/
        )

        const pretty = yield* serveAndStop({ SVC_LOG_FORMAT: "pretty" }, threeRequests)
        const prettyLines = pretty.stderr.trim().split("\n")
        // One line an entry, no colours when stderr is not a terminal.
        assert.isFalse(pretty.stderr.includes("\x1b["))
        assert.match(
          prettyLines.find((line) => line.includes("corr-exec"))!,
          /^\d\d:\d\d:\d\d\.\d{3} INFO  POST \/v1\/machines\/:id\/exec 401 [\d.]+ms correlation_id=corr-exec$/
        )
        assert.strictEqual(prettyLines.filter((line) => line.includes("Listening on")).length, 1)

        const refused = yield* run(["serve"], { SVC_LOG_FORMAT: "xml" })
        assert.strictEqual(refused.code, 1)
        assert.strictEqual(refused.stdout, "")
        assert.match(refused.stderr, /^svc: invalid configuration: SVC_LOG_FORMAT: [^\n]+\n$/)
      }),
    90_000
  )
})
