/**
 * Terminals end to end: a real sandbox, svc on loopback, the WebSocket driven by a `ws` client.
 * vi edits a file through the PTY; resize reaches the program; tickets are single-use and expire
 * after 60 s (TestClock); the WebSocket ends with the machine's stop and with a revocation, and its
 * close ends the terminal's session; an open terminal holds off idle sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Context, Effect, TestClock } from "effect"
import { AccessRevocations } from "../../src/kernel/AccessRevocations.js"
import { client } from "../support/Http.js"
import { change, eventually, realSleep, runningMachine, sh } from "../support/Machines.js"
import { mustOpen, openTerminal } from "../support/Terminals.js"
import { startServer } from "../support/TestServer.js"

const setup = Effect.gen(function*() {
  const server = yield* startServer({ runtime: "sandbox" })
  const owner = yield* server.bootstrap("owner@example.com")
  return { server, owner, api: client(server.url, { key: owner.api_key }) }
})

type Api = ReturnType<typeof client>

const ticket = (api: Api, id: string, body: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const reply = yield* api("POST", `/v1/machines/${id}/terminals`, { json: body })
    assert.strictEqual(reply.status, 201, reply.text)
    return reply.body as { id: string; ticket: string; url: string; expires_at: string }
  })

/**
 * Until svc has recorded the terminal's end (its close is the machine's latest activity): a session
 * closed while its login shell still starts takes a moment to end, after the client saw the close.
 */
const closedOnServer = (databaseFile: string, terminalId: string) =>
  eventually(
    Effect.sync(() => {
      const db = new Database(databaseFile, { readonly: true })
      try {
        const row = db.prepare("SELECT closed_at FROM terminals WHERE id = ?").get(terminalId) as
          | { closed_at: number | null }
          | undefined
        return row?.closed_at == null ? undefined : true
      } finally {
        db.close()
      }
    })
  )

const stdout = (operation: any) => Buffer.from(operation.exec_result.stdout_base64, "base64").toString()

const stateIs = (api: Api, id: string, state: string) =>
  eventually(
    Effect.map(api("GET", `/v1/machines/${id}`), (reply) => reply.body.state === state ? reply.body : undefined)
  )

describe("terminals", () => {
  it.scopedLive(
    "vi edits a file through the PTY; resize; single use; the close ends the session",
    () =>
      Effect.gen(function*() {
        const { api } = yield* setup
        const id = yield* runningMachine(api, "term", { internet_access: false })

        const made = yield* ticket(api, id, { command: ["vi", "/root/note.txt"] })
        assert.match(
          made.url,
          new RegExp(`^ws://127\\.0\\.0\\.1:\\d+/v1/machines/${id}/terminals/${made.id}/socket\\?ticket=`)
        )
        assert.isTrue(Date.parse(made.expires_at) - Date.now() <= 60_000)
        const vi = yield* mustOpen(made.url)
        yield* vi.waitFor("note.txt")
        yield* vi.type("ihello through svc")
        yield* vi.waitFor("hello through svc")
        yield* vi.type("\x1b:wq\r")
        assert.strictEqual(yield* vi.closed, 1000)
        assert.deepStrictEqual(vi.messages(), [{ type: "exit", exit_code: 0 }])
        assert.strictEqual(stdout(yield* sh(api, id, "cat /root/note.txt")), "hello through svc\n")

        // The ticket was used: again, it opens nothing; nor does a made-up one.
        assert.deepStrictEqual(yield* openTerminal(made.url), { refused: 404 })
        assert.deepStrictEqual(yield* openTerminal(made.url.replace(/ticket=.*/, "ticket=nope")), { refused: 404 })

        // Resize: the program sees the new size (and its SIGWINCH) on the same PTY.
        const sized = yield* mustOpen(
          (yield* ticket(api, id, { cols: 90, rows: 20, command: ["sh", "-c", "stty size; tty; read x; stty size"] }))
            .url
        )
        const first = yield* sized.waitFor(/20 90\r\n\/dev\/pts\/\d+\r\n/)
        yield* sized.resize(132, 43)
        yield* realSleep(100)
        yield* sized.type("\r")
        yield* sized.waitFor("43 132", first.length)
        assert.strictEqual(yield* sized.closed, 1000)

        // Closing the WebSocket ends the terminal's whole session, a job in its own group included.
        const shell = yield* mustOpen((yield* ticket(api, id)).url)
        yield* shell.type("sleep 1000 & echo job=$!; echo $$ > /tmp/shell.pid\r")
        const job = /job=(\d+)/.exec(yield* shell.waitFor(/job=\d+/))![1]
        yield* eventually(Effect.map(sh(api, id, "cat /tmp/shell.pid"), (op) => stdout(op) === "" ? undefined : true))
        shell.ws.close()
        const alive = (pid: string) =>
          Effect.map(sh(api, id, `kill -0 ${pid} 2>/dev/null && echo alive || echo gone`), stdout)
        yield* eventually(Effect.map(alive(job!), (text) => text === "gone\n" ? true : undefined))
        const shellPid = stdout(yield* sh(api, id, "cat /tmp/shell.pid")).trim()
        assert.strictEqual(yield* alive(shellPid), "gone\n")
      }),
    { timeout: 120_000 }
  )

  it.scopedLive(
    "the machine's stop and a revocation close the WebSocket; tickets are refused for a stopped machine",
    () =>
      Effect.gen(function*() {
        const { api, server, owner } = yield* setup
        const id = yield* runningMachine(api, "stopping", { internet_access: false })

        // A revocation of the organization: the open terminal closes (4403), the unused ticket is void.
        const open = yield* mustOpen((yield* ticket(api, id)).url)
        const unused = yield* ticket(api, id)
        const revocations = Context.get(server.context, AccessRevocations)
        const revoked = yield* revocations.organization(owner.organization_id)
        assert.deepStrictEqual(revoked, { tickets_revoked: 1, channels_revoked: 1 })
        assert.strictEqual(yield* open.closed, 4403)
        assert.deepStrictEqual(yield* openTerminal(unused.url), { refused: 404 })
        assert.deepStrictEqual(
          yield* revocations.member(owner.organization_id, owner.user_id),
          { tickets_revoked: 0, channels_revoked: 0 }
        )

        // A member's revocation ends their terminals only.
        const mine = yield* mustOpen((yield* ticket(api, id)).url)
        assert.deepStrictEqual(
          yield* revocations.member(owner.organization_id, "00000000-0000-0000-0000-000000000000"),
          { tickets_revoked: 0, channels_revoked: 0 }
        )
        assert.deepStrictEqual(
          yield* revocations.member(owner.organization_id, owner.user_id),
          { tickets_revoked: 0, channels_revoked: 1 }
        )
        assert.strictEqual(yield* mine.closed, 4403)

        // The machine's stop closes its open terminal (4409).
        const shell = yield* mustOpen((yield* ticket(api, id)).url)
        yield* shell.type("echo ready\r")
        yield* shell.waitFor("ready\r\n")
        yield* change(api, "POST", `/v1/machines/${id}/stop`, { force: true })
        assert.strictEqual(yield* shell.closed, 4409)

        const refused = yield* api("POST", `/v1/machines/${id}/terminals`, { json: {} })
        assert.strictEqual(refused.status, 409)
        assert.strictEqual(refused.body.code, "machine_not_running")
        assert.strictEqual(
          (yield* api("POST", `/v1/machines/00000000-0000-4000-8000-000000000000/terminals`, { json: {} })).status,
          404
        )
      }),
    { timeout: 120_000 }
  )

  it.scoped(
    "a ticket expires after 60 s; an open terminal holds off idle sleep until it closes",
    () =>
      Effect.gen(function*() {
        const { api, server } = yield* setup
        const id = yield* runningMachine(api, "sleepy", { internet_access: false, idle_sleep_seconds: 30 })

        const late = yield* ticket(api, id)
        // The stop timers take the boot in first (real time), then the clock moves.
        yield* realSleep(300)
        yield* TestClock.adjust("61 seconds")
        assert.deepStrictEqual(yield* openTerminal(late.url), { refused: 404 })
        // Idle since its start for 61 s: the machine is put to sleep.
        yield* stateIs(api, id, "stopped")
        yield* change(api, "POST", `/v1/machines/${id}/start`)
        yield* realSleep(300)

        const shellTicket = yield* ticket(api, id)
        const shell = yield* mustOpen(shellTicket.url)
        yield* TestClock.adjust("59 seconds")
        const openTicket = yield* ticket(api, id)
        const open = yield* mustOpen(openTicket.url)
        open.ws.close()
        yield* open.closed
        yield* closedOnServer(server.config.databaseFile, openTicket.id)
        yield* TestClock.adjust("10 minutes")
        yield* realSleep(300)
        assert.strictEqual((yield* api("GET", `/v1/machines/${id}`)).body.state, "running")

        shell.ws.close()
        yield* shell.closed
        yield* closedOnServer(server.config.databaseFile, shellTicket.id)
        yield* realSleep(300)
        yield* TestClock.adjust("29 seconds")
        yield* realSleep(300)
        assert.strictEqual((yield* api("GET", `/v1/machines/${id}`)).body.state, "running")
        yield* TestClock.adjust("2 seconds")
        const machine = yield* stateIs(api, id, "stopped")
        assert.strictEqual(machine.last_stop_reason, "idle_sleep")
      }),
    { timeout: 120_000 }
  )
})
