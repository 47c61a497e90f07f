/**
 * The sign-up policy as a service: under invite_only only known addresses and addresses holding an
 * open invitation (asked through the kernel's OpenInvitations port, here a layer that says yes for
 * one address) get an account, by e-mail or by a provider; an invited new user gets no organization
 * of their own (they join the inviting one); open lets anyone in.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Accounts } from "../../src/identity/Accounts.js"
import { EmailSignIn } from "../../src/identity/EmailSignIn.js"
import { OpenInvitations } from "../../src/kernel/Invitations.js"
import { Organizations } from "../../src/organizations/Organizations.js"
import { execute, latestCode, withAreas } from "./support.js"

const invited = "invited@example.com"
const oneInvitation = Layer.succeed(OpenInvitations, {
  heldBy: (email) => Effect.succeed(email.toLowerCase() === invited)
})

const count = (table: string) =>
  Effect.map(execute(`SELECT count(*) AS n FROM ${table}`), (rows) => (rows[0] as { n: number }).n)

const noSession = Effect.dieMessage("no session asked")

describe("sign-up policy", () => {
  it.scoped("invite_only: a stranger gets no code; an invited address signs up by code and gets no organization", () =>
    withAreas(
      (config) =>
        Effect.gen(function*() {
          const signIn = yield* EmailSignIn
          yield* signIn.start("stranger@example.com", null, "127.0.0.1")
          assert.strictEqual(yield* count("email_sign_ins"), 0)

          yield* signIn.start("Invited@Example.com", null, "127.0.0.1")
          const verified = yield* signIn.verify(invited, yield* latestCode(config, invited), noSession)
          assert.strictEqual(verified.kind, "signed_in")
          if (verified.kind !== "signed_in") return
          assert.strictEqual(verified.user.email, invited)
          assert.isNull(verified.organizationId)
          assert.deepStrictEqual(yield* (yield* Organizations).organizationsOf(verified.user.id), [])
          assert.strictEqual(yield* count("users"), 1)
        }),
      { signup: "invite_only" },
      oneInvitation
    ))

  it.scoped("invite_only: a provider sign-in creates only invited or known users", () =>
    withAreas(
      () =>
        Effect.gen(function*() {
          const accounts = yield* Accounts
          const stranger = yield* Effect.flip(accounts.signInWithProvider({
            provider: "op",
            subject: "s1",
            email: "stranger@example.com",
            emailVerified: true
          }))
          assert.strictEqual(stranger._tag, "SignUpRefused")
          const made = yield* accounts.signInWithProvider({
            provider: "op",
            subject: "s2",
            email: invited,
            emailVerified: true
          })
          assert.strictEqual(made.user.email, invited)
          // An unverified address never creates (or finds) a user.
          const unverified = yield* Effect.flip(accounts.signInWithProvider({
            provider: "op",
            subject: "s3",
            email: invited,
            emailVerified: false
          }))
          assert.strictEqual(unverified._tag, "SignUpRefused")
          // The same subject later finds the same user, whatever address it brings.
          const again = yield* accounts.signInWithProvider({
            provider: "op",
            subject: "s2",
            email: undefined,
            emailVerified: false
          })
          assert.strictEqual(again.user.id, made.user.id)
        }),
      { signup: "invite_only" },
      oneInvitation
    ))

  it.scoped("open: any verified address signs up and owns a new organization", () =>
    withAreas(() =>
      Effect.gen(function*() {
        const made = yield* (yield* Accounts).signIn("anyone@example.com")
        assert.isNotNull(made.organizationId)
      }), { signup: "open" }))
})
