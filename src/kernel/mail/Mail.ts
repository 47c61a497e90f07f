/**
 * Outgoing mail. One `Mail` service whose transport `SVC_MAIL` chooses: an outbox folder (one JSON
 * file per message, the embedded default and what tests read), SMTP through nodemailer, or off.
 * Callers never learn which; they see `available` and a `send` that fails with `MailSendFailed`.
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import { outboxTransport } from "./OutboxTransport.js"
import { smtpTransport } from "./SmtpTransport.js"
import { type MailMessage, MailSendFailed, type Transport } from "./Transport.js"

export { type Envelope, type MailMessage, MailSendFailed, type Transport } from "./Transport.js"

export interface MailShape {
  /** False when `SVC_MAIL=off`: nothing can be sent. */
  readonly available: boolean
  readonly from: string
  readonly send: (message: MailMessage) => Effect.Effect<void, MailSendFailed>
}

export class Mail extends Context.Tag("svc/mail/Mail")<Mail, MailShape>() {}

/** `SVC_MAIL_FROM`, else `svc@<host of the base URL>`. */
export const senderFor = (baseUrl: string, explicit: string | undefined) => {
  if (explicit !== undefined && explicit.trim() !== "") return explicit.trim()
  const host = new URL(baseUrl).hostname
  return `svc@${/^[\d.]+$|:/.test(host) ? "localhost" : host}`
}

export const make = (from: string, transport: Transport | undefined): MailShape => ({
  available: transport !== undefined,
  from,
  send: (message) =>
    transport === undefined
      ? Effect.fail(new MailSendFailed({ cause: "mail is off (SVC_MAIL=off)" }))
      : transport({ ...message, from }).pipe(Effect.withSpan("Mail.send"))
})

export const layer = Layer.scoped(
  Mail,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const from = senderFor(config.baseUrl, config.mailFrom)
    switch (config.mail.kind) {
      case "off":
        return make(from, undefined)
      case "outbox":
        return make(from, yield* outboxTransport(config.mail.dir))
      case "smtp":
        return make(from, yield* smtpTransport(config.mail.url, config.extraCaCerts))
    }
  })
)
