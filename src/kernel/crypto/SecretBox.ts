/**
 * Sealing values at rest with the secret keys (`SVC_SECRET_KEYS`, extensions.md §1): AES-256-GCM
 * with the first key; any key opens what it sealed, so keys can be rotated by putting a new one
 * first. Sealed text is `v1.<key id>.<iv>.<tag>.<ciphertext>` (base64url); the key id is the start
 * of the key's SHA-256, never the key. With no setting, one key is generated into
 * `<data dir>/secret.key` (mode 0600) the first time it is needed; with `none`, nothing can be sealed.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { AppConfig } from "../config/AppConfig.js"
import { makeFolders } from "../Folders.js"
import { ProblemError } from "../http/Problem.js"
import { safeEqual } from "./Tokens.js"

export class SecretsUnavailable extends ProblemError<SecretsUnavailable>()(
  "secrets_unavailable",
  503,
  "Secret storage is not available on this server"
) {}

const keyId = (key: Buffer) => NodeCrypto.createHash("sha256").update(key).digest("hex").slice(0, 12)

const generatedKey = (dataDir: string) => {
  const file = NodePath.join(dataDir, "secret.key")
  if (!NodeFs.existsSync(file)) {
    makeFolders(dataDir, 0o700)
    try {
      NodeFs.writeFileSync(file, NodeCrypto.randomBytes(32).toString("base64") + "\n", { mode: 0o600, flag: "wx" })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error // another process made it first
    }
  }
  const key = Buffer.from(NodeFs.readFileSync(file, "utf8").trim(), "base64")
  if (key.length !== 32) throw new Error(`${file} must hold base64 of 32 bytes`)
  return key
}

/** A key of its own per purpose, so a MAC is never an encryption key's output nor valid for another use. */
const macKey = (key: Buffer, purpose: string) =>
  NodeCrypto.createHmac("sha256", key).update(`svc mac ${purpose}`).digest()

const macWith = (key: Buffer, purpose: string, text: string) =>
  NodeCrypto.createHmac("sha256", macKey(key, purpose)).update(text, "utf8").digest("base64url")

const make = Effect.map(AppConfig, (config) => {
  let keys: ReadonlyArray<Buffer> | undefined
  const loadKeys = () =>
    keys ??= config.secretKeys.kind === "none"
      ? []
      : config.secretKeys.kind === "given"
      ? config.secretKeys.keys.map(Redacted.value)
      : [generatedKey(config.dataDir)]
  const unavailable = new SecretsUnavailable({ detail: "SVC_SECRET_KEYS is none: values cannot be stored" })
  return {
    seal: (plain: string) =>
      Effect.suspend(() => {
        const key = loadKeys()[0]
        if (key === undefined) return Effect.fail(unavailable)
        const iv = NodeCrypto.randomBytes(12)
        const cipher = NodeCrypto.createCipheriv("aes-256-gcm", key, iv)
        const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()])
        const parts = [iv, cipher.getAuthTag(), body].map((part) => part.toString("base64url"))
        return Effect.succeed(["v1", keyId(key), ...parts].join("."))
      }),
    /** Whether anything can be sealed or signed (false with `SVC_SECRET_KEYS=none`). */
    available: () => loadKeys().length > 0,
    /** An HMAC-SHA256 of `text` for `purpose` under the first key (base64url); none without keys. */
    sign: (purpose: string, text: string) =>
      Effect.suspend(() => {
        const key = loadKeys()[0]
        return key === undefined ? Effect.fail(unavailable) : Effect.succeed(macWith(key, purpose, text))
      }),
    /** Whether `mac` signs `text` for `purpose` under any key (rotation keeps old links valid); constant time. */
    verify: (purpose: string, text: string, mac: string) =>
      Effect.sync(() => loadKeys().some((key) => safeEqual(macWith(key, purpose, text), mac))),
    /** Opens a sealed value; a missing key is a defect of the deployment (it was sealed with one). */
    open: (sealed: string) =>
      Effect.sync(() => {
        const [version, id, iv, tag, body] = sealed.split(".")
        const key = loadKeys().find((candidate) => keyId(candidate) === id)
        if (version !== "v1" || key === undefined || iv === undefined || tag === undefined || body === undefined) {
          throw new Error(`no secret key ${id} to open a sealed value; was SVC_SECRET_KEYS changed?`)
        }
        const decipher = NodeCrypto.createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"))
        decipher.setAuthTag(Buffer.from(tag, "base64url"))
        return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8")
      })
  }
})

export class SecretBox
  extends Context.Tag("svc/kernel/crypto/SecretBox")<SecretBox, Effect.Effect.Success<typeof make>>()
{
  static readonly layer = Layer.effect(SecretBox, make)
}
