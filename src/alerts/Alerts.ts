/**
 * E-mail alert preferences and unsubscribe links (extensions §19): a member reads and sets their own
 * choices per type; an unsubscribe token turns its one type off without a session.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { Organizations } from "../organizations/Organizations.js"
import { InvalidUnsubscribeToken } from "./Errors.js"
import { makePreferences } from "./Preferences.js"
import { AlertsRepo } from "./Repo.js"
import type { AlertType } from "./Types.js"
import { makeUnsubscribeTokens, type Unsubscribe } from "./UnsubscribeTokens.js"

const make = Effect.gen(function*() {
  const repo = yield* AlertsRepo
  const organizations = yield* Organizations
  const preferences = yield* makePreferences
  const tokens = yield* makeUnsubscribeTokens

  const view = (organizationId: string, userId: string, email: string) =>
    Effect.map(preferences.of(organizationId, userId), (alerts) => ({
      organization_id: organizationId,
      user_id: userId,
      email,
      alerts
    }))

  const badToken = new InvalidUnsubscribeToken({
    detail: "This unsubscribe link is not valid; use the link of an alert e-mail as sent"
  })

  /** What a token names, or 400. */
  const read = (token: string | undefined): Effect.Effect<Unsubscribe, InvalidUnsubscribeToken> =>
    token === undefined
      ? Effect.fail(badToken)
      : Effect.flatMap(
        tokens.read(token),
        Option.match({ onNone: () => Effect.fail(badToken), onSome: Effect.succeed })
      )

  return {
    view,
    /** Sets the listed types; unlisted ones keep their setting (unknown types are refused at the door). */
    update: (
      organizationId: string,
      userId: string,
      email: string,
      alerts: Readonly<Partial<Record<AlertType, boolean | undefined>>>
    ) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        for (const [type, enabled] of Object.entries(alerts)) {
          if (enabled !== undefined) yield* repo.setPreference(organizationId, userId, type, enabled, now)
        }
        return yield* view(organizationId, userId, email)
      }),
    /** What an unsubscribe link would turn off (the GET page: changes nothing). */
    preview: read,
    /** Turns the token's type off for its member; a member who left has nothing to turn off. */
    unsubscribe: (token: string | undefined) =>
      Effect.gen(function*() {
        const what = yield* read(token)
        const member = yield* organizations.membership(what.organizationId, what.userId)
        if (Option.isSome(member)) {
          yield* repo.setPreference(what.organizationId, what.userId, what.type, false, yield* Clock.currentTimeMillis)
        }
        return { organization_id: what.organizationId, type: what.type as AlertType, enabled: false }
      })
  }
})

export class Alerts extends Context.Tag("svc/alerts/Alerts")<Alerts, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Alerts, make)
}
