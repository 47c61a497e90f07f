/** `SVC_EXTRA_CA_CERTS` as `svc serve` reads it: a PEM file read at start, a wrong one named. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { tempDir } from "../../support/TestServer.js"
import { makeCa } from "../../support/Tls.js"
import { read } from "./support.js"

describe("SVC_EXTRA_CA_CERTS", () => {
  it.scoped("unset: none; a PEM file: its certificates; unreadable or not a certificate: the start stops, named", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const unset = yield* read({})
      assert.isTrue(unset._tag === "Right" && unset.right.extraCaCerts === undefined)

      const first = makeCa(dir, "first")
      const second = makeCa(dir, "second")
      const bundle = NodePath.join(dir, "bundle.pem")
      NodeFs.writeFileSync(bundle, `# two CAs\n${first.caPem}\n${second.caPem}`)
      const set = yield* read({ SVC_EXTRA_CA_CERTS: bundle })
      assert.deepStrictEqual(
        set._tag === "Right" && set.right.extraCaCerts?.map((pem) => pem.trim()),
        [first.caPem.trim(), second.caPem.trim()]
      )

      const failureOf = (value: string) =>
        Effect.map(read({ SVC_EXTRA_CA_CERTS: value }), (result) => result._tag === "Left" ? String(result.left) : "")
      const missing = yield* failureOf(NodePath.join(dir, "nope.pem"))
      assert.include(missing, "SVC_EXTRA_CA_CERTS")
      assert.include(missing, "cannot read")
      const notPem = NodePath.join(dir, "key.pem")
      NodeFs.writeFileSync(notPem, "hello\n")
      assert.include(yield* failureOf(notPem), "holds no PEM certificate")
      const broken = NodePath.join(dir, "broken.pem")
      NodeFs.writeFileSync(broken, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
      assert.include(yield* failureOf(broken), "does not parse")
    }))
})
