/**
 * The guest programs (src/drivers/guest/*.sh) take a tenant's values as arguments, never as shell
 * text: a hostile path or mode runs nothing. Judged from the host: the programs run here in a temp
 * folder as they run in a machine (`/bin/sh -c <text> svc-<name> args...`).
 */
import { assert, describe, it } from "@effect/vitest"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { guestArgv } from "../../src/drivers/Guest.js"

const run = (cwd: string, argv: ReadonlyArray<string>, input = "") =>
  NodeChild.spawnSync(argv[0]!, argv.slice(1), { cwd, input, env: { PATH: process.env.PATH!, HOME: cwd } })

describe("guest programs", () => {
  it("write-file: a path or mode holding shell syntax is a name or a refused mode, never a command", () => {
    const home = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-guest-"))
    const marker = NodePath.join(home, "pwned")
    const hostile = `a/$(touch ${marker})\`touch ${marker}\`;touch ${marker}`
    const wrote = run(home, guestArgv("write-file", hostile, "replace", ""), "data")
    assert.strictEqual(wrote.status, 0, String(wrote.stderr))
    assert.strictEqual(NodeFs.readFileSync(NodePath.join(home, hostile), "utf8"), "data")
    const moded = run(home, guestArgv("write-file", "b", "append", `644; touch ${marker}`), "x")
    assert.notStrictEqual(moded.status, 0) // chmod refuses the mode; the file was written, nothing ran
    assert.isFalse(NodeFs.existsSync(marker))
    NodeFs.rmSync(home, { recursive: true, force: true })
  })

  it("key-check refuses an agent without a key; executable's path holding shell syntax runs nothing", () => {
    const home = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-guest-"))
    const marker = NodePath.join(home, "pwned")
    const checked = run(home, guestArgv("key-check", "NONE", "true"))
    assert.strictEqual(checked.status, 97)
    assert.include(String(checked.stderr), "svc: no provider key")
    const ran = run(home, guestArgv("executable", `$(touch ${marker})`))
    assert.notStrictEqual(ran.status, 0)
    assert.isFalse(NodeFs.existsSync(marker))
    NodeFs.rmSync(home, { recursive: true, force: true })
  })
})
