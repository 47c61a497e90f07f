/**
 * `files/read` and `files/write` take back what was asked and no more, and end in bounded time,
 * however the machine answers (src/runtime/FileTransfers.ts). On the sandbox driver: the attacker
 * is the machine's root, who binds fake `head` and `cat` over /usr/bin inside its own mount
 * namespace (the host's files stay as they are: checked from the host).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import { client } from "../support/Http.js"
import { change, decode, runningMachine, settled, sh } from "../support/Machines.js"
import { startServer } from "../support/TestServer.js"

const setup = (overrides: Parameters<typeof startServer>[0] = {}) =>
  Effect.gen(function*() {
    const server = yield* startServer({ runtime: "sandbox", ...overrides })
    const owner = yield* server.bootstrap("owner@example.com")
    const api = client(server.url, { key: owner.api_key })
    return { api, id: yield* runningMachine(api, "target") }
  })

/** Binds a script of `body` over `/usr/bin/<program>` in the machine, as its root. */
const bind = (api: Parameters<typeof sh>[0], id: string, program: string, body: string) =>
  Effect.gen(function*() {
    const made = yield* change(api, "POST", `/v1/machines/${id}/exec`, {
      command: [
        "/bin/sh",
        "-c",
        `printf '#!/bin/sh\\n%s\\n' "$1" > /root/fake-${program} && chmod +x /root/fake-${program} && ` +
        `mount --bind /root/fake-${program} /usr/bin/${program}`,
        "bind",
        body
      ]
    })
    assert.strictEqual(made.exec_result.exit_code, 0, decode(made.exec_result.stderr_base64))
  })

/** The machine's mailbox is free: an exec accepted now runs and answers. */
const nextRuns = (api: Parameters<typeof sh>[0], id: string) =>
  Effect.gen(function*() {
    const next = yield* sh(api, id, "echo next")
    assert.strictEqual(next.status, "succeeded")
    assert.strictEqual(decode(next.exec_result.stdout_base64), "next\n")
  })

const hostProgram = (path: string) => NodeFs.readFileSync(path).subarray(0, 4).toString("latin1")

describe("file reads and writes are bounded", () => {
  it.scopedLive(
    "a fake head or cat that answers more than asked fails read_limit_exceeded; svc keeps none of it",
    () =>
      Effect.gen(function*() {
        const { api, id } = yield* setup()
        yield* sh(api, id, "printf 'abc' > /root/small")
        // head answers 8 MiB for a 1-byte range: the range is announced longer than asked.
        yield* bind(api, id, "head", "exec dd if=/dev/zero bs=1048576 count=8 2>/dev/null")
        const byHead = yield* change(api, "POST", `/v1/machines/${id}/files/read`, {
          ranges: [{ path: "/root/small", offset: 0, size: 1 }]
        })
        assert.strictEqual(byHead.status, "failed")
        assert.strictEqual(byHead.error_code, "read_limit_exceeded")
        assert.isNull(byHead.file_ranges ?? null)
        yield* nextRuns(api, id)

        // cat answers without end after the announced byte: svc stops at the first byte past it.
        yield* sh(api, id, "umount /usr/bin/head")
        yield* bind(api, id, "cat", "exec yes")
        const byCat = yield* change(api, "POST", `/v1/machines/${id}/files/read`, {
          ranges: [{ path: "/root/small", offset: 0, size: 1 }]
        })
        assert.strictEqual(byCat.status, "failed")
        assert.strictEqual(byCat.error_code, "read_limit_exceeded")
        yield* nextRuns(api, id)
        // The binds were the machine's own: the host's programs are untouched.
        assert.strictEqual(hostProgram("/usr/bin/head"), "\x7fELF")
        assert.strictEqual(hostProgram("/usr/bin/cat"), "\x7fELF")
      }),
    120_000
  )

  it.scopedLive(
    "a read or a write that never ends fails file_operation_timeout and frees the mailbox",
    () =>
      Effect.gen(function*() {
        const { api, id } = yield* setup({ fileOperationSeconds: 3 })
        yield* sh(api, id, "printf 'abc' > /root/small")
        yield* bind(api, id, "head", "exec sleep 3600")
        const read = yield* api("POST", `/v1/machines/${id}/files/read`, {
          json: { ranges: [{ path: "/root/small", offset: 0, size: 1 }] }
        })
        // Accepted behind the read: it runs once the read has timed out.
        const behind = yield* api("POST", `/v1/machines/${id}/exec`, { json: { shell: "echo behind" } })
        const timedOut = yield* settled(api, read.body.operation_id, 60_000)
        assert.strictEqual(timedOut.status, "failed")
        assert.strictEqual(timedOut.error_code, "file_operation_timeout")
        const ran = yield* settled(api, behind.body.operation_id, 60_000)
        assert.strictEqual(decode(ran.exec_result.stdout_base64), "behind\n")

        // A write whose cat never ends: whether part of the file was written cannot be known.
        yield* bind(api, id, "cat", "exec sleep 3600")
        const write = yield* api("POST", `/v1/machines/${id}/files/write`, {
          json: { path: "/root/out", data_base64: Buffer.from("hello").toString("base64") }
        })
        const stuck = yield* settled(api, write.body.operation_id, 60_000)
        assert.strictEqual(stuck.status, "correlation_miss")
        assert.strictEqual(stuck.error_code, "file_operation_timeout")
        yield* nextRuns(api, id)
        // The killed commands are gone: nothing sleeps in the machine any more.
        const left = yield* sh(api, id, "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done")
        assert.notInclude(decode(left.exec_result.stdout_base64), "sleep 3600")
      }),
    120_000
  )
})
