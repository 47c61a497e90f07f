/**
 * Unsubscribe tokens (extensions §19): `<base64url of "organization.user.type">.<HMAC>`, signed
 * under the secret keys for this purpose only and checked in constant time. They do not expire: a
 * link in an old e-mail still turns its type off. Nothing is stored; a key rotation keeps old links
 * valid as long as the old key is listed.
 */
import { Effect, Option } from "effect"
import { SecretBox } from "../kernel/crypto/SecretBox.js"
import { type AlertType, isAlertType } from "./Types.js"

const purpose = "alerts-unsubscribe"
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export interface Unsubscribe {
  readonly organizationId: string
  readonly userId: string
  readonly type: AlertType
}

export const makeUnsubscribeTokens = Effect.gen(function*() {
  const box = yield* SecretBox
  return {
    sign: (what: Unsubscribe) =>
      Effect.map(
        box.sign(purpose, `${what.organizationId}.${what.userId}.${what.type}`),
        (mac) => `${Buffer.from(`${what.organizationId}.${what.userId}.${what.type}`).toString("base64url")}.${mac}`
      ),
    /** What a token names, if it is one of ours. */
    read: (token: string): Effect.Effect<Option.Option<Unsubscribe>> => {
      const [payload, mac, ...rest] = token.split(".")
      if (payload === undefined || mac === undefined || rest.length > 0 || token.length > 512) {
        return Effect.succeedNone
      }
      const text = Buffer.from(payload, "base64url").toString("utf8")
      const [organizationId, userId, type, ...more] = text.split(".")
      if (
        organizationId === undefined || userId === undefined || type === undefined || more.length > 0 ||
        !uuid.test(organizationId) || !uuid.test(userId) || !isAlertType(type)
      ) return Effect.succeedNone
      return Effect.map(
        box.verify(purpose, text, mac),
        (valid) => valid ? Option.some({ organizationId, userId, type }) : Option.none()
      )
    }
  }
})
