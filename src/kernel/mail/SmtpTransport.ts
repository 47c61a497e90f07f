/**
 * The SMTP transport, through nodemailer (well kept, handles auth, STARTTLS, pooling and the
 * protocol's corner cases better than code we would write). The pool is closed with the scope.
 */
import { Effect, Redacted } from "effect"
import * as Nodemailer from "nodemailer"
import { MailSendFailed, type Transport } from "./Transport.js"

const timeoutMillis = 30_000

export const smtpTransport = (url: Redacted.Redacted<string>) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      Nodemailer.createTransport({
        url: Redacted.value(url),
        pool: true,
        connectionTimeout: timeoutMillis,
        greetingTimeout: timeoutMillis,
        socketTimeout: timeoutMillis
      } as Nodemailer.TransportOptions)
    ),
    (transporter) => Effect.sync(() => transporter.close())
  ).pipe(
    Effect.map((transporter): Transport => (envelope) =>
      Effect.tryPromise({
        try: () =>
          transporter.sendMail({
            from: envelope.from,
            to: envelope.to,
            subject: envelope.subject,
            text: envelope.text,
            ...(envelope.html === undefined ? {} : { html: envelope.html }),
            ...(envelope.headers === undefined ? {} : { headers: { ...envelope.headers } })
          }),
        catch: (cause) => new MailSendFailed({ cause })
      }).pipe(Effect.asVoid)
    )
  )
