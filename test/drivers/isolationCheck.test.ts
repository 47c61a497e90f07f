import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import * as Cgroups from "../../src/drivers/sandbox/Cgroups.js"
import { missingIsolation } from "../../src/drivers/sandbox/IsolationCheck.js"
import { checkTools } from "../../src/drivers/sandbox/SandboxDriver.js"

describe("the sandbox driver's start-up check (IsolationCheck.ts)", () => {
  it.live("this host isolates machines; without Perl, or without cgroups, it says what is missing", () =>
    Effect.gen(function*() {
      const tools = yield* checkTools
      const dataDir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-isolation-check-"))
      try {
        const cgroups = Cgroups.detect()
        assert.isUndefined(missingIsolation({ perl: tools.perl, dataDir, cgroups: undefined }))
        if (cgroups.enforced) assert.isUndefined(missingIsolation({ perl: tools.perl, dataDir, cgroups }))
        assert.include(missingIsolation({ perl: undefined, dataDir, cgroups: undefined }), "Perl")
        assert.include(missingIsolation({ perl: tools.perl, dataDir, cgroups: Cgroups.none }), "pids")
      } finally {
        NodeFs.rmSync(dataDir, { recursive: true, force: true })
      }
    }))
})
