/**
 * The sign-in methods this server offers: its OIDC providers, email when mail is on, and whether
 * anyone may sign up. The providers route and the sign-in page both read it.
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { Mail } from "../kernel/mail/Mail.js"

export interface SignInMethod {
  readonly name: string
  readonly display_name: string
  readonly kind: "oidc" | "email"
  readonly default: boolean
}

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const mail = yield* Mail
  const providers: ReadonlyArray<SignInMethod> = [
    ...config.oidcProviders.map((provider) => ({
      name: provider.name,
      display_name: provider.display_name,
      kind: "oidc" as const,
      default: provider.default
    })),
    ...(mail.available ? [{ name: "email", display_name: "Email", kind: "email" as const, default: false }] : [])
  ]
  return {
    access: config.signup,
    providers,
    waitlistUrl: config.waitlistUrl ?? null,
    emailAvailable: mail.available
  }
})

export class SignInMethods extends Context.Tag("svc/identity/SignInMethods")<
  SignInMethods,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(SignInMethods, make)
}
