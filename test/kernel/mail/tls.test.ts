/**
 * SMTP over TLS to a real SMTP server (smtp-server) with a certificate of a CA the test makes:
 * STARTTLS on `smtp://` and TLS from the first byte on `smtps://`. Trusting that CA through
 * `SVC_EXTRA_CA_CERTS` (the config field it fills), the message arrives over TLS; trusting another
 * CA, the send fails with a certificate error and nothing arrives. `smtp://` off loopback requires
 * STARTTLS; a server that does not offer it is refused when the URL asks for it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { AppConfig } from "../../../src/kernel/config/AppConfig.js"
import * as Mail from "../../../src/kernel/mail/Mail.js"
import { smtpOptions } from "../../../src/kernel/mail/SmtpTransport.js"
import { smtpServer, smtpServerRefusing } from "../../support/Smtp.js"
import { tempDir, testConfig } from "../../support/TestServer.js"
import { testCa } from "../../support/Tls.js"

const mailTrusting = (url: string, extraCaCerts: ReadonlyArray<string> | undefined) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const config = testConfig(dir, 8080, { mail: { kind: "smtp", url: Redacted.make(url) }, extraCaCerts })
    return yield* Mail.Mail.pipe(Effect.provide(Mail.layer.pipe(Layer.provide(Layer.succeed(AppConfig, config)))))
  })

const message: Mail.MailMessage = { to: "someone@example.com", subject: "Over TLS", text: "Your code is 123456" }

/** The messages of an error and its causes, for a look at why a send failed. */
const causes = (error: unknown): string => {
  const cause = (error as { cause?: unknown } | null)?.cause
  const own = error instanceof Error ? error.message : String(error)
  return cause === undefined || cause === error ? own : `${own}: ${causes(cause)}`
}

describe("SMTP over TLS", () => {
  for (const mode of ["starttls", "implicit"] as const) {
    it.scoped(`${mode}: delivered over TLS with the test CA trusted, refused with another CA`, () =>
      Effect.gen(function*() {
        const ca = yield* testCa()
        const other = yield* testCa("another CA")
        const smtp = yield* smtpServerRefusing(0, { certificate: ca.issue("127.0.0.1"), mode })
        assert.match(smtp.url, mode === "implicit" ? /^smtps:/ : /^smtp:/)

        const trusting = yield* mailTrusting(smtp.url, [ca.caPem])
        yield* trusting.send(message)
        assert.strictEqual(smtp.received.length, 1)
        assert.isTrue(smtp.received[0]!.secure, "the message came over TLS")
        assert.include(smtp.received[0]!.data, "Your code is 123456")

        const wrong = yield* mailTrusting(smtp.url, [other.caPem])
        const failed = yield* Effect.flip(wrong.send({ ...message, subject: "Never" }))
        assert.strictEqual(failed._tag, "MailSendFailed")
        assert.match(causes(failed.cause), /certificate/i)
        // Node's default CAs alone do not know the test CA either.
        const untrusted = yield* mailTrusting(smtp.url, undefined)
        assert.match(causes((yield* Effect.flip(untrusted.send(message))).cause), /certificate/i)
        assert.strictEqual(smtp.received.length, 1, "nothing arrived past a certificate svc does not trust")
      }))
  }

  it.scoped("smtp:// requires STARTTLS off loopback; a server without it is refused when asked", () =>
    Effect.gen(function*() {
      assert.isTrue(smtpOptions("smtp://u:p@mail.example.com:587", undefined).requireTLS)
      assert.isUndefined(smtpOptions("smtp://u:p@127.0.0.1:25", undefined).requireTLS)
      assert.isUndefined(smtpOptions("smtps://u:p@mail.example.com", undefined).requireTLS)
      const plain = yield* smtpServer
      const requiring = yield* mailTrusting(`${plain.url}?requireTLS=true`, undefined)
      const refused = yield* Effect.flip(requiring.send(message))
      assert.match(causes(refused.cause), /STARTTLS/)
      assert.strictEqual(plain.received.length, 0)
      // Plain SMTP on loopback stays as it was (a local relay).
      yield* (yield* mailTrusting(plain.url, undefined)).send(message)
      assert.isFalse(plain.received[0]!.secure)
    }))
})
