/**
 * Email sign-in as a service: the first verified sign-in makes the user and one organization they
 * own, later ones make nothing new; a code works once, within ten minutes (TestClock), only while
 * it is the newest, and five wrong codes close its sign-in. Real outbox mail in a temporary folder.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { EmailSignIn, maxWrongCodes } from "../../src/identity/EmailSignIn.js"
import type { AppConfigShape } from "../../src/kernel/config/AppConfig.js"
import { Organizations } from "../../src/organizations/Organizations.js"
import { execute, latestCode, withAreas } from "./support.js"

/** Starts a sign-in for `email` and answers the code mailed for it. */
const start = (config: AppConfigShape, email: string) =>
  Effect.gen(function*() {
    yield* (yield* EmailSignIn).start(email, "/machines", "127.0.0.1")
    return yield* latestCode(config, email.trim().toLowerCase())
  })

/** Verifies a sign-in code (not a linking one: no session is asked for). */
const verify = (email: string, code: string) =>
  Effect.flatMap(EmailSignIn, (signIn) => signIn.verify(email, code, Effect.dieMessage("no session asked")))
    .pipe(Effect.map((verified) => {
      if (verified.kind !== "signed_in") throw new Error("a sign-in code linked")
      return verified
    }))

const failure = <R>(effect: Effect.Effect<unknown, { readonly _tag: string }, R>) =>
  Effect.map(Effect.flip(effect), (error) => error._tag)

/** A code of six digits other than `code`. */
const wrong = (code: string) => code === "000000" ? "000001" : "000000"

const count = (table: string) =>
  Effect.map(execute(`SELECT count(*) AS n FROM ${table}`), (rows) => (rows[0] as { n: number }).n)

describe("email sign-in", () => {
  it.scoped("the first sign-in makes the user and one organization they own; the next makes nothing new", () =>
    withAreas((config) =>
      Effect.gen(function*() {
        const first = yield* verify("ada@example.com", yield* start(config, "ada@example.com"))
        assert.strictEqual(first.user.email, "ada@example.com")
        assert.strictEqual(first.returnTo, "/machines")
        const organizations = yield* (yield* Organizations).organizationsOf(first.user.id)
        assert.deepStrictEqual(organizations.map((o) => [o.organization_id, o.role]), [[first.organizationId, "owner"]])

        const again = yield* verify(" Ada@Example.com ", yield* start(config, " Ada@Example.com "))
        assert.strictEqual(again.user.id, first.user.id)
        assert.strictEqual(again.organizationId, first.organizationId)
        assert.strictEqual(yield* count("users"), 1)
        assert.strictEqual(yield* count("organizations"), 1)
        assert.strictEqual(yield* count("memberships"), 1)
      })
    ))

  it.scoped("a code works once, and only within ten minutes", () =>
    withAreas((config) =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.parse("2026-11-22T12:00:00Z"))
        const late = yield* start(config, "ada@example.com")
        yield* TestClock.adjust("10 minutes")
        assert.strictEqual(yield* failure(verify("ada@example.com", late)), "invalid_code")

        const inTime = yield* start(config, "ada@example.com")
        yield* TestClock.adjust("9 minutes")
        yield* TestClock.adjust("59 seconds")
        yield* verify("ada@example.com", inTime)
        assert.strictEqual(yield* failure(verify("ada@example.com", inTime)), "invalid_code")
      })
    ))

  it.scoped("a newer code supersedes the older one", () =>
    withAreas((config) =>
      Effect.gen(function*() {
        const older = yield* start(config, "ada@example.com")
        yield* TestClock.adjust("1 seconds")
        const newer = yield* start(config, "ada@example.com")
        if (older !== newer) assert.strictEqual(yield* failure(verify("ada@example.com", older)), "invalid_code")
        yield* verify("ada@example.com", newer)
      })
    ))

  it.scoped(`${maxWrongCodes} wrong codes close the sign-in: the right code then fails too`, () =>
    withAreas((config) =>
      Effect.gen(function*() {
        const code = yield* start(config, "ada@example.com")
        for (let attempt = 1; attempt < maxWrongCodes; attempt++) {
          assert.strictEqual(yield* failure(verify("ada@example.com", wrong(code))), "invalid_code")
        }
        // One wrong code fewer leaves the sign-in open.
        const spare = yield* start(config, "bob@example.com")
        for (let attempt = 1; attempt < maxWrongCodes; attempt++) {
          yield* Effect.flip(verify("bob@example.com", wrong(spare)))
        }
        yield* verify("bob@example.com", spare)

        assert.strictEqual(yield* failure(verify("ada@example.com", wrong(code))), "invalid_code")
        assert.strictEqual(yield* failure(verify("ada@example.com", code)), "invalid_code")
        assert.strictEqual(yield* count("users"), 1)
      })
    ))

  it.scoped("with mail off, starting answers email_unavailable and verifying unsupported_provider", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const signIn = yield* EmailSignIn
        assert.strictEqual(yield* failure(signIn.start("ada@example.com", null, "127.0.0.1")), "email_unavailable")
        assert.strictEqual(yield* failure(verify("ada@example.com", "123456")), "unsupported_provider")
      }), { mail: { kind: "off" } }))
})
