/**
 * The Mail service over each transport: the outbox writes one whole JSON file per message, SMTP
 * delivers to a real SMTP server on loopback (smtp-server, with authentication), and off refuses.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { AppConfig } from "../../../src/kernel/config/AppConfig.js"
import * as Mail from "../../../src/kernel/mail/Mail.js"
import { readOutbox } from "../../../src/kernel/mail/Outbox.js"
import { smtpServer } from "../../support/Smtp.js"
import { tempDir, testConfig } from "../../support/TestServer.js"

const mailWith = (setting: AppConfig["Type"]["mail"], mailFrom?: string) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const config = { ...testConfig(dir, 8080, { mail: setting }), mailFrom }
    return yield* Mail.Mail.pipe(Effect.provide(Mail.layer.pipe(Layer.provide(Layer.succeed(AppConfig, config)))))
  })

const message: Mail.MailMessage = {
  to: "someone@example.com",
  subject: "Hello",
  text: "Your sign-in code is 123456",
  html: "<p>Your sign-in code is <strong>123456</strong></p>"
}

describe("mail", () => {
  it.scoped("the outbox holds one complete JSON file per message, in order", () =>
    Effect.gen(function*() {
      const dir = NodePath.join(yield* tempDir, "outbox")
      const mail = yield* mailWith({ kind: "outbox", dir })
      assert.isTrue(mail.available)
      yield* mail.send(message)
      yield* mail.send({ ...message, subject: "Second" })
      const messages = yield* readOutbox(dir)
      assert.deepStrictEqual(messages.map((m) => m.subject), ["Hello", "Second"])
      assert.strictEqual(messages[0]!.from, "svc@localhost")
      assert.strictEqual(messages[0]!.to, "someone@example.com")
      assert.strictEqual(messages[0]!.text, message.text)
      assert.match(NodePath.basename(messages[0]!.file), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z-[0-9a-f-]{36}\.json$/)
      assert.deepStrictEqual(NodeFs.readdirSync(dir).filter((name) => !name.endsWith(".json")), [])
    }))

  it.scoped("SMTP delivers to a real server with authentication", () =>
    Effect.gen(function*() {
      const smtp = yield* smtpServer
      const mail = yield* mailWith(
        { kind: "smtp", url: Redacted.make(`smtp://svc:secret@127.0.0.1:${smtp.port}`) },
        "Sign in <signin@svc.example>"
      )
      yield* mail.send(message)
      assert.strictEqual(smtp.received.length, 1)
      const got = smtp.received[0]!
      assert.strictEqual(got.from, "signin@svc.example")
      assert.deepStrictEqual(got.to, ["someone@example.com"])
      assert.include(got.data, "Subject: Hello")
      assert.include(got.data, "Your sign-in code is 123456")
    }))

  it.scoped("SMTP with wrong credentials fails the send, typed", () =>
    Effect.gen(function*() {
      const smtp = yield* smtpServer
      const mail = yield* mailWith({ kind: "smtp", url: Redacted.make(`smtp://svc:wrong@127.0.0.1:${smtp.port}`) })
      const error = yield* Effect.flip(mail.send(message))
      assert.strictEqual(error._tag, "MailSendFailed")
      assert.strictEqual(smtp.received.length, 0)
    }))

  it.scoped("off is unavailable and refuses to send", () =>
    Effect.gen(function*() {
      const mail = yield* mailWith({ kind: "off" })
      assert.isFalse(mail.available)
      const error = yield* Effect.flip(mail.send(message))
      assert.strictEqual(error._tag, "MailSendFailed")
    }))

  it("the sender defaults to svc@ the base URL's host name", () => {
    assert.strictEqual(Mail.senderFor("https://svc.example.org", undefined), "svc@svc.example.org")
    assert.strictEqual(Mail.senderFor("http://127.0.0.1:8080", undefined), "svc@localhost")
    assert.strictEqual(Mail.senderFor("http://x", "ops@example.org"), "ops@example.org")
  })
})
