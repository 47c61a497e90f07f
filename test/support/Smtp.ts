/**
 * A real SMTP server (smtp-server) on a loopback port that accepts `svc`/`secret` and records what
 * it gets: plain, with STARTTLS, or TLS from the first byte (`smtps://`), with a certificate of the
 * test CA (Tls.ts) for 127.0.0.1.
 */
import { Effect } from "effect"
import { SMTPServer } from "smtp-server"
import { freePort } from "./TestServer.js"
import type { ServerCertificate } from "./Tls.js"

export interface Received {
  readonly from: string | undefined
  readonly to: ReadonlyArray<string>
  readonly data: string
  /** Whether the session was over TLS when the message came. */
  readonly secure: boolean
}

export interface SmtpTls {
  readonly certificate: ServerCertificate
  /** `starttls`: plain first, upgraded on STARTTLS; `implicit`: TLS from the first byte. */
  readonly mode: "starttls" | "implicit"
}

/** `refuse`: how many messages it answers with a temporary failure (451) before it takes them. */
export const smtpServerRefusing = (refuse: number, tls?: SmtpTls) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const received: Array<Received> = []
    let refused = 0
    const server = new SMTPServer({
      authOptional: false,
      allowInsecureAuth: tls === undefined,
      ...(tls === undefined
        ? { disabledCommands: ["STARTTLS"] }
        : { key: tls.certificate.key, cert: tls.certificate.cert, secure: tls.mode === "implicit" }),
      onAuth: (auth, _session, callback) =>
        auth.username === "svc" && auth.password === "secret"
          ? callback(null, { user: "svc" })
          : callback(new Error("Invalid username or password")),
      onData: (stream, session, callback) => {
        const chunks: Array<Buffer> = []
        stream.on("data", (chunk: Buffer) => chunks.push(chunk))
        stream.on("end", () => {
          if (refused < refuse) {
            refused++
            return callback(Object.assign(new Error("Try again later"), { responseCode: 451 }))
          }
          received.push({
            from: session.envelope.mailFrom === false ? undefined : session.envelope.mailFrom.address,
            to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
            data: Buffer.concat(chunks).toString("utf8"),
            secure: session.secure
          })
          callback()
        })
      }
    })
    // A client that refuses the certificate ends the handshake: an error the server reports.
    const errors: Array<string> = []
    server.on("error", (error) => errors.push(error.message))
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.listen(port, "127.0.0.1", () => resume(Effect.void))
      }),
      () => Effect.async<void>((resume) => server.close(() => resume(Effect.void)))
    )
    const scheme = tls?.mode === "implicit" ? "smtps" : "smtp"
    return { port, received, errors, url: `${scheme}://svc:secret@127.0.0.1:${port}`, refused: () => refused }
  })

export const smtpServer = smtpServerRefusing(0)

/** A header of a received message (unfolded), if present. */
export const headerOf = (data: string, name: string) => {
  const head = data.split(/\r?\n\r?\n/)[0]!.replace(/\r?\n[ \t]+/g, " ")
  const line = head.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`))
  return line === undefined ? undefined : line.slice(name.length + 1).trim()
}
