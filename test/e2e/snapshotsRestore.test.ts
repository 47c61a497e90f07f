/**
 * Templates, restore and fork end to end: each new machine's disk holds exactly what its source
 * held (files, modes, symlinks, times, compared on the host before the new machine ever ran), and
 * every error code of those routes. Real server, real sandboxes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { walk } from "../../src/snapshots/store/Tree.js"
import { pushed, snapshotSettled } from "../snapshots/support.js"
import { client } from "../support/Http.js"
import { change, decode, eventually, readEvents, runningMachine, settled, sh } from "../support/Machines.js"
import { smallHost, startServer } from "../support/TestServer.js"

const setup = (snapshots = { perMachine: 50, templatesPerOrganization: 100 }) =>
  Effect.gen(function*() {
    const server = yield* startServer({ runtime: "sandbox", snapshots })
    const owner = yield* server.bootstrap("owner@example.com")
    return { server, key: owner.api_key, api: client(server.url, { key: owner.api_key }) }
  })

/** Every entry of a machine's disk on the host: path, type, mode, owner, size, target, time (µs) and bytes. */
const picture = (dataDir: string, machineId: string) =>
  Effect.promise(async () => {
    const root = NodePath.join(dataDir, "machines", machineId, "disk")
    return (await walk(root)).map(({ identity: _identity, mtime, ...entry }) => ({
      ...entry,
      // utimes takes a double of seconds, set to the microsecond.
      mtimeMs: Math.floor(Number(BigInt(mtime) / 1_000_000n)),
      sha: entry.type === "file"
        ? NodeCrypto.createHash("sha256").update(NodeFs.readFileSync(NodePath.join(root, entry.path))).digest("hex")
        : undefined
    }))
  })

/** Files of every kind a restore must give back. */
const fill = "head -c 2500000 /dev/urandom > /root/big.bin && seq 1 300000 > /root/numbers.txt && " +
  "mkdir -p /workspace/src/deep && " +
  "for i in 1 2 3 4 5 6 7 8 9 10; do echo file $i > /workspace/src/deep/f$i.txt; done && " +
  "printf '#!/bin/sh\\necho run\\n' > /workspace/run.sh && chmod 4750 /workspace/run.sh && " +
  "ln -s src/deep/f1.txt /workspace/link && ln -s /nowhere /workspace/dangling && : > /workspace/empty && " +
  "touch -d '2001-02-03 04:05:06.789' /workspace/empty && chmod 700 /workspace/src"

const created = (api: ReturnType<typeof client>, path: string, json: Record<string, unknown>) =>
  Effect.gen(function*() {
    const accepted = yield* api("POST", path, { json })
    assert.strictEqual(accepted.status, 202, accepted.text)
    const operation = yield* settled(api, accepted.body.operation_id, 60_000)
    assert.strictEqual(operation.status, "succeeded", JSON.stringify(operation))
    return { operation, machine: (yield* api("GET", `/v1/machines/${accepted.body.machine_id}`)).body }
  })

// Sandboxes, copies of their disks (images made and mounted at create: docs/drivers.md "Disk") and
// 20,000-file folders: slow on a loaded host.
describe("templates, restore and fork", { timeout: 120_000 }, () => {
  it.scopedLive("templates: save, names, limits, get by name or id, machines made from them, delete frees the name", () =>
    Effect.gen(function*() {
      const { api, server } = yield* setup({ perMachine: 50, templatesPerOrganization: 2 })
      const id = yield* runningMachine(api, "tpl-source")
      yield* sh(api, id, fill)
      const running = yield* api("POST", "/v1/templates", { json: { machine_id: id, name: "base" } })
      assert.deepStrictEqual([running.status, running.body.code], [409, "machine_not_stopped"])
      yield* change(api, "POST", `/v1/machines/${id}/stop`, {})
      for (const name of ["Base", "-base", "a".repeat(65), "", "a b"]) {
        const bad = yield* api("POST", "/v1/templates", { json: { machine_id: id, name } })
        assert.strictEqual(bad.status, 422, name)
      }
      const unknown = "0190f5d4-0000-7000-8000-000000000000"
      assert.strictEqual(
        (yield* api("POST", "/v1/templates", { json: { machine_id: unknown, name: "x" } })).status,
        404
      )

      const accepted = yield* api("POST", "/v1/templates", { json: { machine_id: id, name: "base" } })
      assert.strictEqual(accepted.status, 202)
      const template = yield* snapshotSettled(api, accepted.body.snapshot_id)
      assert.include(template, { name: "base", status: "ready", tier: "warm", source: null, machine_id: id })
      const taken = yield* api("POST", "/v1/templates", { json: { machine_id: id, name: "base" } })
      assert.deepStrictEqual([taken.status, taken.body.code], [409, "template_name_taken"])

      // Templates are not the machine's snapshots: not listed there, not the latest, kept by bulk delete.
      assert.deepStrictEqual((yield* api("GET", `/v1/machines/${id}/snapshots`)).body.items, [])
      assert.strictEqual((yield* api("GET", `/v1/machines/${id}/snapshots/latest`)).body.code, "no_snapshot")
      const bulk = yield* api("POST", "/v1/snapshots/bulk-delete", { json: { snapshot_ids: [template.id] } })
      assert.deepStrictEqual(bulk.body, { deleted: 0, results: [{ snapshot_id: template.id, result: "template" }] })
      const byMachine = yield* api("DELETE", `/v1/machines/${id}/snapshots`)
      assert.deepStrictEqual(byMachine.body, {
        deleted: 0,
        results: [{ snapshot_id: template.id, result: "template" }]
      })

      assert.deepStrictEqual((yield* api("GET", "/v1/templates/base")).body, template)
      assert.deepStrictEqual((yield* api("GET", `/v1/templates/${template.id}`)).body, template)
      assert.strictEqual((yield* api("GET", "/v1/templates/nope")).status, 404)
      const listed = (yield* api("GET", "/v1/templates")).body
      assert.deepStrictEqual(listed, { items: [template], next_cursor: null })

      // A machine made from the template holds what the source held.
      const made = yield* created(api, "/v1/machines", { name: "from-tpl", template: "base", start: false })
      assert.strictEqual(made.operation.kind, "create")
      assert.deepStrictEqual(made.machine.source, { kind: "template", id: template.id })
      assert.strictEqual(made.machine.state, "stopped")
      assert.deepStrictEqual(
        yield* picture(server.config.dataDir, made.machine.id),
        yield* picture(server.config.dataDir, id)
      )
      const byId = yield* created(api, "/v1/machines", { name: "from-tpl-id", template: template.id })
      assert.strictEqual(byId.machine.state, "running")
      const ran = yield* sh(
        api,
        byId.machine.id,
        "cat /workspace/link && /workspace/run.sh && stat -c %a /workspace/run.sh"
      )
      assert.strictEqual(decode(ran.exec_result.stdout_base64), "file 1\nrun\n4750\n")
      const missing = yield* api("POST", "/v1/machines", { json: { name: "nope", template: "nope" } })
      assert.deepStrictEqual([missing.status, missing.body.code], [404, "resource_not_found"])

      // The limit (2), a pending save (queued behind a slow exec), and delete freeing the name.
      yield* change(api, "POST", `/v1/machines/${id}/start`, {})
      assert.strictEqual((yield* api("POST", `/v1/machines/${id}/exec`, { json: { shell: "sleep 3" } })).status, 202)
      assert.strictEqual((yield* api("POST", `/v1/machines/${id}/stop`, { json: {} })).status, 202)
      const second = yield* api("POST", "/v1/templates", { json: { machine_id: id, name: "second" } })
      assert.strictEqual(second.status, 202)
      const full = yield* api("POST", "/v1/templates", { json: { machine_id: id, name: "third" } })
      assert.deepStrictEqual([full.status, full.body.code], [409, "template_limit_reached"])
      const pendingDelete = yield* api("DELETE", "/v1/templates/second")
      assert.deepStrictEqual([pendingDelete.status, pendingDelete.body.code], [409, "snapshot_pending"])
      const pendingCreate = yield* api("POST", "/v1/machines", { json: { name: "early", template: "second" } })
      assert.deepStrictEqual([pendingCreate.status, pendingCreate.body.code], [409, "snapshot_pending"])
      assert.strictEqual((yield* snapshotSettled(api, second.body.snapshot_id)).status, "ready")

      assert.strictEqual((yield* api("DELETE", "/v1/templates/base")).status, 204)
      assert.strictEqual((yield* api("GET", "/v1/templates/base")).status, 404)
      assert.strictEqual((yield* api("DELETE", "/v1/templates/base")).status, 404)
      const again = yield* api("POST", "/v1/templates", { json: { machine_id: id, name: "base" } })
      assert.strictEqual(again.status, 202, "the name is free again")
    }))

  it.scopedLive("restore (latest or named) and fork (stopped or running) make machines holding what the source held", () =>
    Effect.gen(function*() {
      const { api, server, key } = yield* setup()
      const id = yield* runningMachine(api, "source")
      yield* sh(api, id, fill)
      yield* change(api, "POST", `/v1/machines/${id}/stop`, {})
      const none = yield* api("POST", `/v1/machines/${id}/restore`, { json: { name: "nothing" } })
      assert.deepStrictEqual([none.status, none.body.code], [404, "no_snapshot"])
      const first = yield* pushed(api, id)
      yield* change(api, "POST", `/v1/machines/${id}/start`, {})
      yield* sh(api, id, "echo second > /workspace/src/deep/f1.txt")
      yield* change(api, "POST", `/v1/machines/${id}/stop`, {})
      const second = yield* pushed(api, id)

      const latest = yield* created(api, `/v1/machines/${id}/restore`, { name: "restored", start: false })
      assert.strictEqual(latest.operation.kind, "restore")
      assert.deepStrictEqual(latest.machine.source, { kind: "snapshot", id: second.id })
      assert.deepStrictEqual(
        yield* picture(server.config.dataDir, latest.machine.id),
        yield* picture(server.config.dataDir, id)
      )
      const events = yield* readEvents(`${server.url}/v1/operations/${latest.operation.id}/events`, {
        authorization: `Bearer ${key}`
      })
      const progress = events.events.filter((event) => event.event === "progress")
      assert.deepStrictEqual(progress[progress.length - 1]!.data, {
        done_bytes: second.size_bytes,
        total_bytes: second.size_bytes
      })

      // The cold tier: compressed chunks, the same routes, the same files back.
      const cold = yield* pushed(api, id, { tier: "cold" })
      assert.deepStrictEqual([cold.tier, cold.generation, cold.parent_manifest], ["cold", 1, null])
      // numbers.txt (2 MB of text) compresses; the random bytes do not.
      assert.isBelow(cold.uploaded_bytes, cold.size_bytes - 1_000_000)
      const fromCold = yield* created(api, `/v1/machines/${id}/restore`, {
        name: "from-cold",
        snapshot_id: cold.id,
        start: false
      })
      assert.deepStrictEqual(
        yield* picture(server.config.dataDir, fromCold.machine.id),
        yield* picture(server.config.dataDir, id)
      )

      const old = yield* created(api, `/v1/machines/${id}/restore`, { name: "old", snapshot_id: first.id })
      assert.strictEqual(old.machine.state, "running")
      const read = yield* sh(api, old.machine.id, "cat /workspace/link")
      assert.strictEqual(decode(read.exec_result.stdout_base64), "file 1\n", "the first snapshot's content")
      const foreign = yield* api("POST", `/v1/machines/${old.machine.id}/restore`, {
        json: { name: "foreign", snapshot_id: first.id }
      })
      assert.deepStrictEqual([foreign.status, foreign.body.code], [404, "resource_not_found"])

      // Fork of the stopped source.
      const forked = yield* created(api, `/v1/machines/${id}/fork`, { name: "forked", start: false })
      assert.strictEqual(forked.operation.kind, "fork")
      assert.deepStrictEqual(forked.machine.source, { kind: "fork", id })
      assert.deepStrictEqual(
        yield* picture(server.config.dataDir, forked.machine.id),
        yield* picture(server.config.dataDir, id)
      )
      const taken = yield* api("POST", `/v1/machines/${id}/fork`, { json: { name: "forked" } })
      assert.deepStrictEqual([taken.status, taken.body.code], [409, "name_taken"])
      const unknown = "0190f5d4-0000-7000-8000-000000000000"
      assert.strictEqual((yield* api("POST", `/v1/machines/${unknown}/fork`, { json: { name: "x" } })).status, 404)

      // Fork of a running source that writes all the time: the copy is paused whole, so every
      // record in it is complete and the numbers run without a gap.
      yield* change(api, "POST", `/v1/machines/${id}/start`, {})
      yield* sh(
        api,
        id,
        "nohup sh -c 'i=0; while true; do i=$((i+1)); echo \"record $i end\" >> /workspace/log; done' >/dev/null 2>&1 &"
      )
      yield* sh(api, id, "while [ ! -s /workspace/log ]; do sleep 0.01; done")
      const live = yield* created(api, `/v1/machines/${id}/fork`, { name: "live-fork" })
      assert.strictEqual(live.machine.state, "running")
      const log = decode((yield* sh(api, live.machine.id, "cat /workspace/log")).exec_result.stdout_base64)
      const lines = log.split("\n")
      assert.strictEqual(lines.pop(), "", "the copy ends with a whole record")
      lines.forEach((line, index) => assert.strictEqual(line, `record ${index + 1} end`))
      assert.isAbove(lines.length, 0)
      const still = decode(
        (yield* sh(api, id, "wc -l < /workspace/log; sleep 0.2; wc -l < /workspace/log")).exec_result
          .stdout_base64
      ).trim().split("\n").map(Number)
      assert.isAbove(still[1]!, still[0]!, "the source runs on after the fork")
      yield* change(api, "POST", `/v1/machines/${id}/stop`, { force: true })
    }))

  it.scoped("a fork that waits too long for a host slot still gets its source's disk, stopped", () =>
    Effect.gen(function*() {
      const { api, server } = yield* smallHost(1)
      yield* runningMachine(api, "holds-the-slot")
      const source = (yield* api("POST", "/v1/machines", { json: { name: "quiet", start: false } })).body
      assert.strictEqual((yield* settled(api, source.operation_id)).status, "succeeded")
      const disk = NodePath.join(server.config.dataDir, "machines", source.machine_id, "disk")
      NodeFs.writeFileSync(NodePath.join(disk, "workspace", "kept.txt"), "kept\n")
      const forked = yield* api("POST", `/v1/machines/${source.machine_id}/fork`, { json: { name: "waits" } })
      assert.strictEqual(forked.status, 202)
      yield* eventually(
        Effect.map(
          api("GET", `/v1/operations/${forked.body.operation_id}`),
          (reply) => reply.body.starting_soon !== null ? true : undefined
        )
      )
      yield* TestClock.adjust("121 seconds")
      const operation = yield* settled(api, forked.body.operation_id)
      assert.deepStrictEqual([operation.status, operation.error_code], ["failed", "no_capacity"])
      const machine = (yield* api("GET", `/v1/machines/${forked.body.machine_id}`)).body
      assert.strictEqual(machine.state, "stopped")
      assert.deepStrictEqual(
        yield* picture(server.config.dataDir, machine.id),
        yield* picture(server.config.dataDir, source.machine_id)
      )
    }))

  it.scoped("a fork that finds the partial copy a crash left removes it without holding up the event loop", () =>
    Effect.gen(function*() {
      const { api, server } = yield* smallHost(1)
      const holder = yield* runningMachine(api, "holds-the-slot")
      const source = (yield* api("POST", "/v1/machines", { json: { name: "quiet", start: false } })).body
      assert.strictEqual((yield* settled(api, source.operation_id)).status, "succeeded")
      const disk = NodePath.join(server.config.dataDir, "machines", source.machine_id, "disk")
      NodeFs.writeFileSync(NodePath.join(disk, "workspace", "kept.txt"), "kept\n")
      // The fork waits for the host while an earlier attempt's partial copy of 20,000 files is put in place.
      const forked = yield* api("POST", `/v1/machines/${source.machine_id}/fork`, { json: { name: "after-crash" } })
      yield* eventually(Effect.map(
        api("GET", `/v1/operations/${forked.body.operation_id}`),
        (reply) => reply.body.starting_soon !== null ? true : undefined
      ))
      const partial = NodePath.join(server.config.dataDir, "machines", forked.body.machine_id, "disk.partial")
      // Written without blocking: a server that stalls lets the client's idle connections die under it.
      yield* Effect.promise(async () => {
        for (let folder = 0; folder < 200; folder++) {
          const at = NodePath.join(partial, `d${folder}`)
          await NodeFs.promises.mkdir(at, { recursive: true })
          await Promise.all(Array.from({ length: 100 }, (_, file) => NodeFs.promises.writeFile(`${at}/f${file}`, "")))
        }
      })

      // Every machine's actor shares this event loop: it turns while the partial copy is half removed
      // (a removal in this process, rmSync, holds it from the first file to the last). How long it
      // stands still is a figure of bench/tree-removal.ts.
      const folders = () => {
        try {
          return NodeFs.readdirSync(partial).filter((name) => /^d\d+$/.test(name)).length
        } catch {
          return 0
        }
      }
      const loop = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const seen = { halfRemoved: false }
          const timer = setInterval(() => {
            const left = folders()
            if (left > 0 && left < 200) seen.halfRemoved = true
          }, 5)
          return { seen, timer }
        }),
        ({ timer }) => Effect.sync(() => clearInterval(timer))
      )
      yield* change(api, "POST", `/v1/machines/${holder}/stop`, {})
      const operation = yield* settled(api, forked.body.operation_id)
      assert.strictEqual(operation.status, "succeeded")
      assert.isFalse(NodeFs.existsSync(partial))
      assert.strictEqual(
        NodeFs.readFileSync(
          NodePath.join(server.config.dataDir, "machines", forked.body.machine_id, "disk", "workspace", "kept.txt"),
          "utf8"
        ),
        "kept\n"
      )
      assert.isTrue(loop.seen.halfRemoved, "the event loop turned during the removal")
    }))
})
