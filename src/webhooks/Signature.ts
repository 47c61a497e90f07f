/**
 * Standard Webhooks signatures (extensions.md §9): `webhook-signature` is
 * `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under the secret's bytes; secrets are
 * `whsec_<base64>`.
 */
import * as NodeCrypto from "node:crypto"

export const secretPrefix = "whsec_"

/** A new signing secret: 32 random bytes. */
export const newSecret = () => secretPrefix + NodeCrypto.randomBytes(32).toString("base64")

const keyOf = (secret: string) =>
  Buffer.from(secret.startsWith(secretPrefix) ? secret.slice(secretPrefix.length) : secret, "base64")

export const sign = (secret: string, id: string, timestampSeconds: number, body: string) =>
  "v1," + NodeCrypto.createHmac("sha256", keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest("base64")

/** The three headers of one attempt. */
export const signedHeaders = (secret: string, id: string, timestampSeconds: number, body: string) => ({
  "webhook-id": id,
  "webhook-timestamp": String(timestampSeconds),
  "webhook-signature": sign(secret, id, timestampSeconds, body)
})
