/**
 * The text of an API key (extensions.md §3): `svc_` + 8 characters of key id + `_` + at least 32
 * random characters. Only a hash of the whole text is stored; `prefix` and `last_four` are shown.
 */
import * as NodeCrypto from "node:crypto"

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
const keyIdAlphabet = "abcdefghijkmnpqrstuvwxyz23456789"

const randomText = (length: number, chars: string) => {
  const bytes = NodeCrypto.randomBytes(length)
  let out = ""
  for (let i = 0; i < length; i++) out += chars[bytes[i]! % chars.length]
  return out
}

export interface ApiKeyText {
  readonly keyId: string
  readonly text: string
}

export const generate = (): ApiKeyText => {
  const keyId = randomText(8, keyIdAlphabet)
  return { keyId, text: `svc_${keyId}_${randomText(40, alphabet)}` }
}

const pattern = /^svc_([a-z0-9]{8})_([A-Za-z0-9]{32,128})$/

/** The key id of a well-formed key text, or undefined. */
export const parse = (text: string): string | undefined => pattern.exec(text)?.[1]

export const prefixOf = (keyId: string) => `svc_${keyId}`

export const lastFourOf = (text: string) => text.slice(-4)

export const hash = (text: string) => NodeCrypto.createHash("sha256").update(text).digest("hex")
