/**
 * `svc --help` for every command: each option, argument and command described, no line over 100
 * columns, the full command in the usage line; piped output without colour codes; a mistyped
 * subcommand names its siblings; completion (the candidates, and bash running the script).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { svc } from "../../src/cli/Commands.js"
import { allCommands, commandSpec } from "../../src/cli/CommandSpec.js"
import { complete, completionScripts } from "../../src/cli/Completer.js"
import { renderHelp } from "../../src/cli/Help.js"
import { cliScript } from "../support/CheckoutBundle.js"
import { runCli } from "../support/Cli.js"
import { tempDir } from "../support/TestServer.js"

const spec = commandSpec(svc)
const env = { SVC_LOG_LEVEL: "none", SVC_URL: "http://127.0.0.1:9", SVC_API_KEY: undefined }

describe("svc --help", () => {
  it("every command, option and argument is described; no help line is over 100 columns", () => {
    const problems: Array<string> = []
    const commands = allCommands(spec)
    for (const command of commands) {
      const name = command.path.join(" ")
      if (command.description === "") problems.push(`${name}: no description`)
      for (const option of command.options) {
        if (option.description === "") problems.push(`${name} ${option.names[0]}: no description`)
      }
      for (const arg of command.args) {
        if (arg.description === "") problems.push(`${name} <${arg.name}>: no description`)
      }
      const help = renderHelp(command)
      assert.match(help, new RegExp(`^Usage: ${name}( |$)`, "m"), name)
      for (const line of help.split("\n")) {
        if (line.length > 100) problems.push(`${name}: a line of ${line.length} columns: ${line}`)
      }
      if (/user-defined piece of text|\x1b\[/.test(help)) problems.push(`${name}: @effect/cli's generic text`)
    }
    assert.deepStrictEqual(problems, [])
    // The tree is walked whole: the groups and their commands.
    assert.isAbove(commands.length, 60)
    for (const group of ["env", "keys", "members", "ports", "ssh-keys", "usage", "billing", "alerts", "completion"]) {
      assert.isDefined(spec.subcommands.find((c) => c.name === group), group)
    }
  })

  it.scopedLive(
    "the CLI prints it piped without colour; a mistyped command names its siblings",
    () =>
      Effect.gen(function*() {
        const help = yield* runCli(["machines", "exec", "--help"], env)
        assert.strictEqual(help.code, 0, help.stderr)
        assert.match(help.stdout, /^Usage: svc machines exec \[options\] <machine> \[--\] \[<command>\.\.\.\]\n/)
        assert.match(help.stdout, /\n {2}--cwd CWD +The working directory in the machine/)
        assert.notInclude(help.stdout, "\x1b")

        const top = yield* runCli([], env)
        assert.strictEqual(top.code, 0, top.stderr)
        assert.match(top.stdout, /^Usage: svc <command>/)
        assert.match(top.stdout, /\n {2}env +Environments/)

        const typo = yield* runCli(["machines", "creat", "web"], env)
        assert.strictEqual(typo.code, 2)
        assert.strictEqual(typo.stdout, "")
        assert.match(typo.stderr, /^svc machines: unknown command "creat"; did you mean create\?\n/)
        assert.match(typo.stderr, /list, create, get, start, stop/)

        // @effect/cli's own validation message (a missing argument), piped: no colour codes either.
        const missing = yield* runCli(["env", "get"], env)
        assert.strictEqual(missing.code, 2)
        assert.notInclude(missing.stdout + missing.stderr, "\x1b")
      }),
    300_000
  )
})

describe("svc completion", () => {
  const machines = () => Promise.resolve(["web", "worker", "db"])

  it("completes commands, options, choices and machine names", () =>
    Effect.gen(function*() {
      const at = (...words: Array<string>) => Effect.promise(() => complete(spec, words, { machines }))
      assert.deepStrictEqual(yield* at("mach"), ["machines"])
      assert.deepStrictEqual(yield* at("machines", "cr"), ["create"])
      assert.deepStrictEqual(yield* at("machines", "exec", "w"), ["web", "worker"])
      assert.includeMembers([...(yield* at("machines", "create", "web", "--"))], ["--size", "--no-internet", "--help"])
      assert.deepStrictEqual(yield* at("machines", "create", "web", "--size", ""), ["small", "default", "large"])
      // After the machine, exec's argv is the user's: nothing offered.
      assert.deepStrictEqual(yield* at("machines", "exec", "web", "--", "l"), [])
      assert.deepStrictEqual(yield* at("usage", "--machine", "d"), ["db"])
      assert.deepStrictEqual(yield* at("ports", "token", "web", "8080", "--expires-in", ""), [])
    }).pipe(Effect.runPromise))

  it.scopedLive(
    "bash: the script `svc completion bash` prints completes through `svc __complete`",
    () =>
      Effect.gen(function*() {
        const printed = yield* runCli(["completion", "bash"], env)
        assert.strictEqual(printed.code, 0, printed.stderr)
        assert.strictEqual(printed.stdout, completionScripts.bash)
        // `svc` on PATH, as an installed svc is.
        const dir = yield* tempDir
        NodeFs.writeFileSync(
          NodePath.join(dir, "svc"),
          `#!/bin/sh\nexec "${process.execPath}" "${cliScript()}" "$@"\n`,
          {
            mode: 0o755
          }
        )
        NodeFs.writeFileSync(NodePath.join(dir, "svc.bash"), printed.stdout)
        const script = `source ${dir}/svc.bash; COMP_WORDS=(svc machines cr); COMP_CWORD=2; _svc; ` +
          `printf '%s\\n' "\${COMPREPLY[@]}"; COMP_WORDS=(svc machines create web --si); COMP_CWORD=4; _svc; ` +
          `printf '%s\\n' "\${COMPREPLY[@]}"`
        const out = NodeChild.spawnSync("bash", ["--norc", "-c", script], {
          encoding: "utf8",
          env: { ...process.env, ...env, SVC_API_KEY: "", PATH: `${dir}:${process.env.PATH}` }
        })
        assert.strictEqual(out.status, 0, out.stderr)
        assert.strictEqual(out.stdout, "create\n--size\n")
      }),
    300_000
  )
})
