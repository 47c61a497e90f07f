/** uuidv7: well-formed version-7 ids, in creation order within one millisecond, none repeated across the random pool's refills. */
import { assert, describe, it } from "@effect/vitest"
import { uuidPattern, uuidv7 } from "../../../src/kernel/domain/Ids.js"

describe("uuidv7", () => {
  it("1,000 ids in one millisecond: version 7, RFC variant, sorted as made, all different", () => {
    const ids = Array.from({ length: 1000 }, () => uuidv7(1_700_000_000_000))
    for (const id of ids) {
      assert.match(id, uuidPattern)
      assert.strictEqual(id[14], "7")
      assert.isTrue("89ab".includes(id[19]!))
    }
    assert.deepStrictEqual([...ids].sort(), ids)
    assert.strictEqual(new Set(ids).size, ids.length)
    // The random parts differ too (each id takes fresh bytes from the pool, across its refills).
    assert.strictEqual(new Set(ids.map((id) => id.slice(20))).size, ids.length)
  })
})
