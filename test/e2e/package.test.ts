/**
 * The package as a user gets it: `npm pack` (its prepack builds dist/), the tarball installed into an
 * empty folder, and the client used from a plain `node` script against a real server: a machine
 * created without the fields the server defaults, waited for, and a command run in it. The
 * declarations are checked too: a TypeScript consumer compiles, and a call missing a required field
 * does not. The client package @svc-dev/client the same way, installed offline with nothing else.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { startServer, tempDir } from "../support/TestServer.js"

const root = NodePath.resolve(".")

/** The environment of a command run as a user would, without the npm_* settings of the test run's own npm. */
const cleanEnv = () => Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("npm_")))

const exec = (command: string, args: ReadonlyArray<string>, cwd: string, env: Record<string, string> = {}) =>
  Effect.async<{ readonly stdout: string; readonly stderr: string; readonly code: number }>((resume) => {
    NodeChild.execFile(
      command,
      args,
      { cwd, env: { ...cleanEnv(), ...env }, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resume(
          Effect.succeed({ stdout, stderr, code: error === null ? 0 : typeof error.code === "number" ? error.code : 1 })
        )
    )
  })

const mustExec = (command: string, args: ReadonlyArray<string>, cwd: string, env: Record<string, string> = {}) =>
  Effect.flatMap(exec(command, args, cwd, env), (result) =>
    result.code === 0
      ? Effect.succeed(result)
      : Effect.die(new Error(`${command} ${args.join(" ")} exited ${result.code}\n${result.stdout}\n${result.stderr}`)))

const script = `
import { makeClient } from "svc"
import { Effect } from "effect"

const program = Effect.gen(function*() {
  const svc = yield* makeClient({ baseUrl: process.env.SVC_URL, apiKey: process.env.SVC_API_KEY })
  const accepted = yield* svc.machines.create({ payload: { name: "from-the-package" } })
  const created = yield* svc.waitOperation(accepted)
  const exec = yield* svc.machines.exec({ path: { id: accepted.machine_id }, payload: { shell: "echo packaged" } })
  const done = yield* svc.waitOperation(exec)
  const machine = yield* svc.machines.get({ path: { id: accepted.machine_id } })
  return {
    created: created.status,
    state: machine.state,
    size: machine.size,
    exec: done.status,
    stdout: Buffer.from(done.exec_result.stdout_base64, "base64").toString()
  }
})
console.log(JSON.stringify(await Effect.runPromise(program)))
`

const consumer = `
import { makeClient, WaitTimeout } from "svc"
import { Effect } from "effect"

export const program = Effect.gen(function*() {
  const svc = yield* makeClient({ baseUrl: "http://127.0.0.1:8080", apiKey: "svc_x" })
  const accepted = yield* svc.machines.create({ payload: { name: "typed", internet_access: false } })
  const done = yield* svc.waitOperation(accepted, { timeout: "1 minute" })
  const status: "pending" | "running" | "succeeded" | "failed" | "uncertain" | "correlation_miss" = done.status
  // @ts-expect-error a machine needs a name
  yield* svc.machines.create({ payload: {} })
  return status
}).pipe(Effect.catchTag("WaitTimeout", (error: WaitTimeout) => Effect.succeed(error.operation_id)))
`

/** The Promise client from the client package, as a plain Node program uses it. */
const plainScript = `
import { createClient } from "@svc-dev/client"

const svc = createClient({ url: process.env.SVC_URL, apiKey: process.env.SVC_API_KEY })
const accepted = await svc.machines.create({ payload: { name: "plain" } })
const created = await svc.wait(accepted)
const exec = await svc.wait(await svc.machines.exec({ path: { id: accepted.machine_id }, payload: { shell: "echo plain" } }))
const missing = await svc.machines.get({ path: { id: "00000000-0000-4000-8000-000000000000" } }).catch((e) => e._tag)
console.log(JSON.stringify({
  created: created.status,
  stdout: Buffer.from(exec.exec_result.stdout_base64, "base64").toString(),
  missing
}))
`

const plainConsumer = `
import { createClient } from "@svc-dev/client"

export const run = async () => {
  const svc = createClient({ url: "http://127.0.0.1:8080", apiKey: "svc_x" })
  const accepted = await svc.machines.create({ payload: { name: "typed" } })
  const done = await svc.wait(accepted)
  const status: "pending" | "running" | "succeeded" | "failed" | "uncertain" | "correlation_miss" = done.status
  // @ts-expect-error a machine needs a name
  await svc.machines.create({ payload: {} })
  return status
}
`

describe("the npm package", () => {
  it.scopedLive(
    "installs from its tarball into an empty folder and its client works from plain node",
    () =>
      Effect.gen(function*() {
        const work = yield* tempDir
        // Packed from a copy of the checkout, so that its build writes nothing where other tests run the bundle.
        const checkout = NodePath.join(work, "checkout")
        for (
          const entry of [
            "src",
            "packages",
            "console",
            "bin",
            "schema",
            "docs",
            "package.json",
            "package-lock.json",
            "tsconfig.json",
            "tsconfig.build.json",
            "README.md"
          ]
        ) {
          NodeFs.cpSync(NodePath.join(root, entry), NodePath.join(checkout, entry), { recursive: true })
        }
        NodeFs.symlinkSync(
          NodeFs.realpathSync(NodePath.join(root, "node_modules")),
          NodePath.join(checkout, "node_modules")
        )
        const packed = yield* mustExec("npm", ["pack", "--silent", "--pack-destination", work], checkout)
        const tarball = NodePath.join(work, packed.stdout.trim().split("\n").pop()!)
        assert.isTrue(NodeFs.existsSync(tarball), packed.stdout)

        const app = NodePath.join(work, "app")
        NodeFs.mkdirSync(app)
        NodeFs.writeFileSync(
          NodePath.join(app, "package.json"),
          JSON.stringify({ name: "app", private: true, type: "module" })
        )
        // Install scripts are skipped: the client needs no native module, and building SQLite's would take minutes.
        yield* mustExec(
          "npm",
          ["install", tarball, "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund"],
          app
        )
        const installed = JSON.parse(NodeFs.readFileSync(NodePath.join(app, "node_modules/svc/package.json"), "utf8"))
        assert.strictEqual(installed.exports["."].default, "./dist/index.js")
        assert.isFalse(
          NodeFs.existsSync(NodePath.join(app, "node_modules/svc/src")),
          "no TypeScript sources are shipped"
        )

        NodeFs.writeFileSync(NodePath.join(app, "consumer.ts"), consumer)
        const typed = yield* exec(
          process.execPath,
          [
            NodePath.join(root, "node_modules/typescript/bin/tsc"),
            "--noEmit",
            "--strict",
            "--exactOptionalPropertyTypes",
            "--module",
            "nodenext",
            "--moduleResolution",
            "nodenext",
            "--target",
            "es2022",
            "--skipLibCheck",
            "consumer.ts"
          ],
          app
        )
        assert.strictEqual(typed.code, 0, typed.stdout + typed.stderr)

        const server = yield* startServer()
        const owner = yield* server.bootstrap("package@example.com")
        NodeFs.writeFileSync(NodePath.join(app, "use.mjs"), script)
        const used = yield* mustExec(process.execPath, ["use.mjs"], app, {
          SVC_URL: server.url,
          SVC_API_KEY: owner.api_key
        })
        assert.deepStrictEqual(JSON.parse(used.stdout), {
          created: "succeeded",
          state: "running",
          size: "default",
          exec: "succeeded",
          stdout: "packaged\n"
        })

        // The client alone, @svc-dev/client (bin/build-client.mjs, declarations from the build above):
        // packed, installed offline into an empty folder (it depends on nothing), used from plain node
        // and type-checked from TypeScript.
        const clientDir = NodePath.join(work, "client")
        yield* mustExec(
          process.execPath,
          ["bin/build-client.mjs", clientDir, NodePath.join(checkout, "dist")],
          checkout
        )
        const clientPacked = yield* mustExec("npm", ["pack", "--silent", "--pack-destination", work], clientDir)
        const clientTarball = NodePath.join(work, clientPacked.stdout.trim().split("\n").pop()!)
        const plain = NodePath.join(work, "plain")
        NodeFs.mkdirSync(plain)
        NodeFs.writeFileSync(
          NodePath.join(plain, "package.json"),
          JSON.stringify({ name: "plain", private: true, type: "module" })
        )
        yield* mustExec("npm", ["install", clientTarball, "--offline", "--no-audit", "--no-fund"], plain)
        assert.deepStrictEqual(
          NodeFs.readdirSync(NodePath.join(plain, "node_modules")).filter((n) => n !== ".package-lock.json"),
          [
            "@svc-dev"
          ]
        )
        NodeFs.writeFileSync(NodePath.join(plain, "use.mjs"), plainScript)
        const plainUsed = yield* mustExec(process.execPath, ["use.mjs"], plain, {
          SVC_URL: server.url,
          SVC_API_KEY: owner.api_key
        })
        assert.deepStrictEqual(JSON.parse(plainUsed.stdout), {
          created: "succeeded",
          stdout: "plain\n",
          missing: "resource_not_found"
        })
        NodeFs.writeFileSync(NodePath.join(plain, "consumer.ts"), plainConsumer)
        const plainTyped = yield* exec(process.execPath, [
          NodePath.join(root, "node_modules/typescript/bin/tsc"),
          "--noEmit",
          "--strict",
          "--module",
          "nodenext",
          "--moduleResolution",
          "nodenext",
          "--target",
          "es2022",
          "--skipLibCheck",
          "--types",
          "node",
          "--typeRoots",
          NodePath.join(root, "node_modules/@types"),
          "consumer.ts"
        ], plain)
        assert.strictEqual(plainTyped.code, 0, plainTyped.stdout + plainTyped.stderr)
      }),
    { timeout: 600_000 }
  )
})
