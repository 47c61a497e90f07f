/**
 * The CLI's commands for the rest of the API a person uses, against a real server: environments
 * (a value from stdin, never printed back), API keys (the secret once, then revoked), whoami and
 * members, ports and their tokens, usage, billing and alert preferences.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import { makeClient } from "../../src/index.js"
import { cliFor } from "../support/Cli.js"
import { startServer } from "../support/TestServer.js"

const secretKeys = { kind: "given" as const, keys: [Redacted.make(NodeCrypto.randomBytes(32))] }

describe("svc CLI: environments, keys, members, ports, usage, billing, alerts", () => {
  it.scopedLive(
    "environments: create, set from a flag and from stdin, unset, list; values never shown",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer({ secretKeys })
        const owner = yield* server.bootstrap("env@example.com")
        const cli = yield* cliFor(server.url, owner.api_key)
        const client = yield* makeClient({ baseUrl: server.url, apiKey: owner.api_key })

        const created = yield* cli.run(["env", "create", "agents", "MODE=fast"])
        assert.strictEqual(created.code, 0, created.stderr)
        assert.match(created.stdout, /^created environment agents \(.+\), version 1\n$/)

        // A bare NAME reads its value from stdin, without the trailing newline.
        const set = yield* cli.run(["env", "set", "agents", "ANTHROPIC_API_KEY", "REGION=eu"], {
          input: "sk-ant-secret\n"
        })
        assert.strictEqual(set.code, 0, set.stderr)
        assert.strictEqual(set.stdout, "agents: version 2 (REGION, ANTHROPIC_API_KEY)\n")
        assert.include(set.stderr, "svc env upgrade agents")

        const unset = yield* cli.run(["env", "unset", "agents", "MODE", "--json"])
        assert.strictEqual(unset.code, 0, unset.stderr)
        const after = JSON.parse(unset.stdout)
        assert.strictEqual(after.version, 3)
        assert.deepStrictEqual([...after.variable_names].sort(), ["ANTHROPIC_API_KEY", "REGION"])

        const listed = yield* cli.run(["env", "list"])
        assert.strictEqual(listed.code, 0, listed.stderr)
        assert.match(listed.stdout, /^NAME +ID +VERSION +VARIABLES +UPDATED\nagents +\S+ +3 +/)
        assert.notInclude(listed.stdout, "sk-ant-secret")

        // The value reached the machine's environment as given (read through the server's own store).
        const environments = yield* client.environments.list()
        assert.strictEqual(environments.items[0]!.version, 3)

        const bad = yield* cli.run(["env", "set", "agents", "not a name=1"])
        assert.strictEqual(bad.code, 2)
        assert.match(bad.stderr, /expected NAME=value or NAME/)

        const deleted = yield* cli.run(["env", "delete", "agents"])
        assert.strictEqual(deleted.code, 0, deleted.stderr)
        assert.deepStrictEqual((yield* client.environments.list()).items, [])
      }),
    400_000
  )

  it.scopedLive(
    "keys: create prints the secret once and it works; revoke ends it; whoami; members",
    () =>
      Effect.gen(function*() {
        const server = yield* startServer()
        const owner = yield* server.bootstrap("keys@example.com")
        const cli = yield* cliFor(server.url, owner.api_key)

        const created = yield* cli.run(["keys", "create", "ci", "--preset", "read_only", "--expires-in-days", "7"])
        assert.strictEqual(created.code, 0, created.stderr)
        const secret = created.stdout.trim()
        assert.match(secret, /^svc_\S+$/)
        assert.match(created.stderr, /only time its secret is shown/)

        const asCi = yield* cliFor(server.url, secret)
        const who = yield* asCi.run(["whoami"])
        assert.strictEqual(who.code, 0, who.stderr)
        assert.match(
          who.stdout,
          /^keys@example\.com \(.+\)\norganization .+, role owner\ncredential api_key read_only\n$/
        )

        const members = yield* asCi.run(["members", "list", "--json"])
        assert.strictEqual(members.code, 0, members.stderr)
        assert.deepStrictEqual(JSON.parse(members.stdout).map((m: any) => [m.email, m.role]), [[
          "keys@example.com",
          "owner"
        ]])

        const listed = yield* cli.run(["keys", "list"])
        assert.match(listed.stdout, /\nci +\S+ +svc_\S*\.\.\.\S{4} +read_only /)
        assert.notInclude(listed.stdout, secret)

        const revoked = yield* cli.run(["keys", "revoke", "ci"])
        assert.strictEqual(revoked.code, 0, revoked.stderr)
        assert.strictEqual(revoked.stdout, "revoked ci\n")
        const refused = yield* asCi.run(["whoami"])
        assert.strictEqual(refused.code, 1)
        assert.match(refused.stderr, /\(401\)/)
      }),
    400_000
  )

  it.scopedLive("ports, port tokens, usage, billing and alerts of a running machine", () =>
    Effect.gen(function*() {
      const server = yield* startServer()
      const owner = yield* server.bootstrap("ports@example.com")
      const cli = yield* cliFor(server.url, owner.api_key)
      const client = yield* makeClient({ baseUrl: server.url, apiKey: owner.api_key })
      yield* client.waitOperation(yield* client.machines.create({ payload: { name: "web" } }))

      const exposed = yield* cli.run(["ports", "expose", "web", "8080", "--wait"])
      assert.strictEqual(exposed.code, 0, exposed.stderr)
      const ports = yield* cli.run(["ports", "list", "web"])
      assert.match(ports.stdout, /^PORT +PUBLIC\n8080 +false\n$/)
      const token = yield* cli.run(["ports", "token", "web", "8080", "--expires-in", "120", "--json"])
      assert.strictEqual(token.code, 0, token.stderr)
      assert.match(JSON.parse(token.stdout).url, /^http/)

      const usage = yield* cli.run(["usage"])
      assert.strictEqual(usage.code, 0, usage.stderr)
      assert.match(usage.stdout, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d to .+ running, \$\d+\.\d\d\n/)
      const billing = yield* cli.run(["billing", "show"])
      assert.strictEqual(billing.code, 0, billing.stderr)
      assert.match(billing.stdout, /^status: +unlimited\n/)

      const disabled = yield* cli.run(["alerts", "disable", "auto_stop"])
      assert.strictEqual(disabled.code, 0, disabled.stderr)
      assert.match(disabled.stdout, /^TYPE +ENABLED\nauto_stop +false\n$/)
      const typo = yield* cli.run(["alerts", "disable", "auto-stop"])
      assert.strictEqual(typo.code, 2)
    }), 400_000)
})
