/**
 * Time-ordered identifiers (UUID version 7, RFC 9562). Ids made later in this process sort after
 * earlier ones even within one millisecond (a 12-bit counter fills `rand_a`), so rows and files
 * named by them list in creation order and SQLite appends to its indexes instead of splitting pages.
 */
import * as NodeCrypto from "node:crypto"

/** A UUID's text, any version; callers lower-case ids before they look them up. */
export const uuidText = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
export const uuidPattern = new RegExp(`^${uuidText}$`, "i")

let lastMillis = 0
let sequence = 0

/**
 * Random bytes drawn 4 KiB at a time: one call into the CSPRNG per 256 ids rather than one per id
 * (a meter tick makes a thousand ledger ids; each call cost about 2 µs). Each id takes its 16 bytes
 * in place, never reused.
 */
const pool = Buffer.alloc(4096)
let drawn = pool.length

const random16 = () => {
  if (drawn === pool.length) {
    NodeCrypto.randomFillSync(pool)
    drawn = 0
  }
  drawn += 16
  return pool.subarray(drawn - 16, drawn)
}

export const uuidv7 = (now: number = Date.now()): string => {
  let millis = Math.max(now, lastMillis)
  if (millis === lastMillis) {
    sequence += 1
    if (sequence > 0xfff) {
      millis += 1
      sequence = 0
    }
  } else {
    sequence = 0
  }
  lastMillis = millis
  const bytes = random16()
  bytes.writeUIntBE(millis, 0, 6)
  bytes[6] = 0x70 | (sequence >> 8)
  bytes[7] = sequence & 0xff
  bytes[8] = 0x80 | (bytes[8]! & 0x3f)
  const hex = bytes.toString("hex")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
