/**
 * The launcher's frames as svc reads them: split across chunks and joined within one; a frame that
 * claims more than the launcher ever sends is refused at its header instead of being buffered.
 */
import { assert, describe, it } from "@effect/vitest"
import { frameReader } from "../../src/drivers/launcher/Launcher.js"

const frame = (type: string, id: number, payload: string) => {
  const header = Buffer.alloc(9)
  header.write(type, 0, "latin1")
  header.writeUInt32BE(id, 1)
  header.writeUInt32BE(Buffer.byteLength(payload), 5)
  return Buffer.concat([header, Buffer.from(payload)])
}

describe("launcher frames", () => {
  it("frames are read whole across chunk boundaries, several in one chunk", () => {
    const seen: Array<string> = []
    let malformed = 0
    const read = frameReader((type, id, payload) => seen.push(`${type}${id}:${payload.toString()}`), () => malformed++)
    const bytes = Buffer.concat([frame("O", 1, "hello"), frame("E", 2, ""), frame("X", 1, "0")])
    for (let i = 0; i < bytes.length; i += 4) read(bytes.subarray(i, i + 4))
    read(Buffer.concat([frame("O", 3, "a"), frame("X", 3, "7")]))
    assert.deepStrictEqual(seen, ["O1:hello", "E2:", "X1:0", "O3:a", "X3:7"])
    assert.strictEqual(malformed, 0)
  })

  it("a frame longer than 1 MiB is refused at its header", () => {
    const seen: Array<string> = []
    let malformed = 0
    const read = frameReader((type) => seen.push(type), () => malformed++)
    const header = Buffer.alloc(9)
    header.write("O", 0, "latin1")
    header.writeUInt32BE(1, 1)
    header.writeUInt32BE(0xffff_ffff, 5)
    read(header)
    assert.strictEqual(malformed, 1)
    assert.deepStrictEqual(seen, [])
  })
})
