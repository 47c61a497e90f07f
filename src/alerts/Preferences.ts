/**
 * Which alert types a member gets: their own choice where they made one, else the type's default;
 * nothing when the type cannot be sent on this server (mail off, no secret keys to sign the
 * unsubscribe link, or billing's types while billing is unlimited). Used by the routes, the recorder
 * and the sender.
 */
import { Effect } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { SecretBox } from "../kernel/crypto/SecretBox.js"
import { Mail } from "../kernel/mail/Mail.js"
import { AlertsRepo } from "./Repo.js"
import { alertSpecs, type AlertType, alertTypes } from "./Types.js"

export interface AlertPreference {
  readonly type: AlertType
  readonly description: string
  readonly available: boolean
  readonly enabled: boolean
  readonly default_enabled: boolean
  readonly customized: boolean
}

export const makePreferences = Effect.gen(function*() {
  const repo = yield* AlertsRepo
  const mail = yield* Mail
  const box = yield* SecretBox
  const metered = (yield* AppConfig).billing === "metered"
  const available = (type: AlertType) => mail.available && box.available() && (metered || !alertSpecs[type].metered)

  const of = (organizationId: string, userId: string) =>
    Effect.map(repo.preferences(organizationId, userId), (rows): ReadonlyArray<AlertPreference> => {
      const chosen = new Map(rows.map((row) => [row.type, row.enabled === 1]))
      return alertTypes.map((type) => {
        const spec = alertSpecs[type]
        const choice = chosen.get(type)
        return {
          type,
          description: spec.description,
          available: available(type),
          enabled: available(type) && (choice ?? spec.defaultEnabled),
          default_enabled: spec.defaultEnabled,
          customized: choice !== undefined
        }
      })
    })

  return {
    available,
    of,
    /** Whether the member gets `type` now. */
    wants: (organizationId: string, userId: string, type: AlertType) =>
      available(type)
        ? Effect.map(of(organizationId, userId), (all) => all.some((p) => p.type === type && p.enabled))
        : Effect.succeed(false)
  }
})
