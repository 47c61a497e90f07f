/** Random tokens and their stored hashes. Only hashes of codes, tokens and keys reach the database. */
import * as NodeCrypto from "node:crypto"

export const randomToken = (bytes = 32) => NodeCrypto.randomBytes(bytes).toString("base64url")

export const sha256 = (text: string) => NodeCrypto.createHash("sha256").update(text).digest("hex")

/** A 6-digit code, uniform over 000000-999999. */
export const sixDigitCode = () => NodeCrypto.randomInt(0, 1_000_000).toString().padStart(6, "0")

export const safeEqual = (a: string, b: string) => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && NodeCrypto.timingSafeEqual(left, right)
}
