/** The sign-in settings as `svc serve` reads them: defaults, and malformed values named. */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { AppConfig, layer as AppConfigFromEnv } from "../../src/kernel/config/AppConfig.js"

const read = (env: Record<string, string>) =>
  Effect.flatMap(AppConfig, (config) => Effect.succeed(config)).pipe(
    Effect.provide(AppConfigFromEnv.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromJson(env))))),
    Effect.either
  )

const provider = (overrides: Record<string, unknown>) => ({
  name: "corp",
  display_name: "Corp",
  issuer: "https://id.example.com",
  client_id: "c",
  client_secret: "s",
  ...overrides
})

const failureOf = (env: Record<string, string>) =>
  Effect.map(read(env), (result) => (result._tag === "Left" ? String(result.left) : "accepted"))

describe("sign-in settings", () => {
  it.effect("SVC_SIGNUP defaults to invite_only; open is accepted; anything else names the variable", () =>
    Effect.gen(function*() {
      const defaults = yield* read({})
      assert.strictEqual(defaults._tag === "Right" && defaults.right.signup, "invite_only")
      assert.strictEqual(defaults._tag === "Right" && defaults.right.waitlistUrl, undefined)
      const open = yield* read({ SVC_SIGNUP: "open", SVC_WAITLIST_URL: "https://example.com/wait" })
      assert.strictEqual(open._tag === "Right" && open.right.signup, "open")
      assert.strictEqual(open._tag === "Right" && open.right.waitlistUrl, "https://example.com/wait")
      assert.include(yield* failureOf({ SVC_SIGNUP: "everyone" }), "SVC_SIGNUP")
      assert.include(yield* failureOf({ SVC_WAITLIST_URL: "not a url" }), "SVC_WAITLIST_URL")
    }))

  it.effect("SVC_OIDC_PROVIDERS takes https issuers, http only on loopback, distinct names, one default", () =>
    Effect.gen(function*() {
      const providers = (list: Array<unknown>) => failureOf({ SVC_OIDC_PROVIDERS: JSON.stringify(list) })
      assert.strictEqual(yield* providers([provider({})]), "accepted")
      assert.strictEqual(yield* providers([provider({ issuer: "http://127.0.0.1:9000" })]), "accepted")
      assert.strictEqual(yield* providers([provider({ issuer: "http://localhost:9000/realms/x" })]), "accepted")
      assert.include(yield* providers([provider({ issuer: "http://id.example.com" })]), "https")
      assert.include(yield* providers([provider({}), provider({})]), "names must differ")
      assert.include(yield* providers([provider({ name: "email" })]), "email")
      assert.include(
        yield* providers([provider({ default: true }), provider({ name: "b", default: true })]),
        "at most one"
      )
      assert.include(yield* failureOf({ SVC_OIDC_PROVIDERS: "[{" }), "SVC_OIDC_PROVIDERS")
    }))
})
