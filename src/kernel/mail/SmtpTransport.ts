/**
 * The SMTP transport, through nodemailer (well kept, handles auth, STARTTLS, pooling and the
 * protocol's corner cases better than code we would write): one connection per message, closed
 * with the scope if one is open then.
 *
 * `smtps://` is TLS from the first byte (port 465); `smtp://` upgrades with STARTTLS, required
 * unless the server is on this host's loopback, so that a man in the middle who strips STARTTLS
 * from the server's answer gets no password (`?requireTLS=false` in the URL lifts it, for a LAN
 * relay without TLS). The server's certificate is always verified, against Node's CAs and those of
 * `SVC_EXTRA_CA_CERTS`.
 */
import { Effect, Redacted } from "effect"
import * as Nodemailer from "nodemailer"
import { trustedCas } from "../tls/TrustedCas.js"
import { MailSendFailed, type Transport } from "./Transport.js"

const timeoutMillis = 30_000

const loopbackHost = (host: string) => host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host)

/**
 * nodemailer's options for `url`. Read here rather than by nodemailer, whose `createTransport`
 * drops every other option when it is given a `url`. The query holds more of nodemailer's own
 * options (`?requireTLS=false`); they win over these.
 */
export const smtpOptions = (url: string, extraCaCerts: ReadonlyArray<string> | undefined) => {
  const ca = trustedCas(extraCaCerts)
  const parsed = new URL(url)
  const query = Object.fromEntries(
    [...parsed.searchParams].map(([key, value]) => [key, value === "true" ? true : value === "false" ? false : value])
  )
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ""),
    ...(parsed.port === "" ? {} : { port: Number(parsed.port) }),
    secure: parsed.protocol === "smtps:",
    ...(parsed.username === ""
      ? {}
      : { auth: { user: decodeURIComponent(parsed.username), pass: decodeURIComponent(parsed.password) } }),
    connectionTimeout: timeoutMillis,
    greetingTimeout: timeoutMillis,
    socketTimeout: timeoutMillis,
    ...(parsed.protocol === "smtp:" && !loopbackHost(parsed.hostname) ? { requireTLS: true } : {}),
    ...(ca === undefined ? {} : { tls: { ca: [...ca] } }),
    ...query
  }
}

export const smtpTransport = (url: Redacted.Redacted<string>, extraCaCerts?: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      Nodemailer.createTransport(smtpOptions(Redacted.value(url), extraCaCerts) as Nodemailer.TransportOptions)
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
