/**
 * `/metrics` on the in-process server: the operator token guards it (404 while none is set), and
 * after a machine is created and a command run the exposition counts them: machines by state,
 * operations by kind and status, the accept histogram, group-commit batches, the webhook queue.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { client } from "../support/Http.js"
import { settled } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

/** The value of the one sample named exactly `series` (name and labels), if present. */
const sample = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe("metrics", () => {
  it.scopedLive("404 without an operator token configured", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const reply = yield* client(server.url)("GET", "/metrics")
      assert.strictEqual(reply.status, 404)
    }))

  it.scopedLive("counts what happened, in Prometheus text, for the operator only", () =>
    Effect.gen(function*() {
      const server = yield* startServer({ operatorToken: Option.some(Redacted.make("op-secret")) })
      const owner = yield* server.bootstrap("metrics@example.com")
      const api = client(server.url, { key: owner.api_key })
      const created = yield* api("POST", "/v1/machines", { json: { name: "m" } })
      assert.strictEqual(created.status, 202)
      yield* settled(api, created.body.operation_id)
      const exec = yield* api("POST", `/v1/machines/${created.body.machine_id}/exec`, { json: { shell: "true" } })
      yield* settled(api, exec.body.operation_id)

      assert.strictEqual((yield* client(server.url)("GET", "/metrics")).status, 401)
      assert.strictEqual((yield* api("GET", "/metrics")).status, 401)
      const wrong = yield* client(server.url, { headers: { "x-svc-operator-token": "nope" } })("GET", "/metrics")
      assert.strictEqual(wrong.status, 401)

      const reply = yield* client(server.url, { headers: { "x-svc-operator-token": "op-secret" } })("GET", "/metrics")
      assert.strictEqual(reply.status, 200)
      assert.match(reply.headers.get("content-type") ?? "", /^text\/plain/)
      const text = reply.text
      assert.strictEqual(sample(text, `svc_machines{state="running"}`), 1)
      assert.strictEqual(sample(text, `svc_operations{kind="create",status="succeeded"}`), 1)
      assert.strictEqual(sample(text, `svc_operations{kind="exec",status="succeeded"}`), 1)
      assert.strictEqual(sample(text, "svc_mailbox_open_operations"), 0)
      assert.strictEqual(sample(text, "svc_webhook_deliveries_pending"), 0)
      assert.strictEqual(sample(text, "svc_alert_mails_pending"), 0)
      assert.isAtLeast(sample(text, "svc_accept_seconds_count") ?? 0, 2)
      assert.strictEqual(sample(text, `svc_accept_seconds_bucket{le="+Inf"}`), sample(text, "svc_accept_seconds_count"))
      assert.isAtLeast(sample(text, "svc_group_commit_batch_jobs_count") ?? 0, 2)
      assert.include(text, "# TYPE svc_accept_seconds histogram\n")
      assert.include(text, "# TYPE svc_machines gauge\n")
      // HTTP by route template and status, the process's own figures; none of Effect's fiber counters.
      assert.isAtLeast(
        sample(text, `svc_http_requests_total{method="POST",route="/v1/machines/:id/exec",status="202"}`) ?? 0,
        1
      )
      assert.isAtLeast(sample(text, `svc_http_requests_total{method="GET",route="/metrics",status="401"}`) ?? 0, 3)
      assert.include(text, "# TYPE svc_http_request_duration_seconds histogram\n")
      assert.strictEqual(
        sample(text, `svc_http_request_duration_seconds_bucket{method="POST",route="/v1/machines",le="+Inf"}`),
        sample(text, `svc_http_request_duration_seconds_count{method="POST",route="/v1/machines"}`)
      )
      assert.notInclude(text, `route="/v1/machines/${created.body.machine_id}`, "routes are templates, not paths")
      assert.isAbove(sample(text, "process_resident_memory_bytes") ?? 0, 0)
      assert.isAbove(sample(text, "process_cpu_user_seconds_total") ?? 0, 0)
      assert.notInclude(text, "effect_fiber_")
    }))
})
