/**
 * Where the single executable writes its SQLite addon: systemd's CacheDirectory, else the data dir,
 * else the user's cache; a folder that cannot be written (a read-only home under the unit's
 * ProtectHome) is passed over for the next.
 */
import { assert, describe, it } from "@effect/vitest"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { addonFile, cacheFolders, useDataDir } from "../../src/kernel/sql/NativeAddon.js"

describe("the single executable's addon cache", () => {
  it("CACHE_DIRECTORY first, then the data dir, then the user's cache", () => {
    useDataDir("/var/lib/svc")
    assert.deepStrictEqual(cacheFolders("abc", { CACHE_DIRECTORY: "/var/cache/svc:/other", XDG_CACHE_HOME: "/c" }), [
      "/var/cache/svc/native/abc",
      "/var/lib/svc/cache/native/abc",
      "/c/svc/abc"
    ])
  })

  it("a folder that cannot be written is passed over; the file is written once", () => {
    const root = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "svc-addon-"))
    try {
      // A file where the first folder should be: mkdir fails there, as in a read-only home.
      const blocked = NodePath.join(root, "blocked")
      NodeFs.writeFileSync(blocked, "")
      const saved = { ...process.env }
      process.env.CACHE_DIRECTORY = NodePath.join(blocked, "cache")
      useDataDir(NodePath.join(root, "data"))
      let writes = 0
      const bytes = () => (writes++, new Uint8Array([1, 2, 3]))
      const file = addonFile("h1", "x.node", bytes)
      assert.strictEqual(file, NodePath.join(root, "data", "cache", "native", "h1", "x.node"))
      assert.deepStrictEqual([...NodeFs.readFileSync(file)], [1, 2, 3])
      assert.strictEqual(addonFile("h1", "x.node", bytes), file)
      assert.strictEqual(writes, 1)
      process.env = saved
    } finally {
      NodeFs.rmSync(root, { recursive: true, force: true })
    }
  })
})
