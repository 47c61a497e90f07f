/** A real SMTP server (smtp-server) on a loopback port that accepts `svc`/`secret` and records what it gets. */
import { Effect } from "effect"
import { SMTPServer } from "smtp-server"
import { freePort } from "./TestServer.js"

export interface Received {
  readonly from: string | undefined
  readonly to: ReadonlyArray<string>
  readonly data: string
}

/** `refuse`: how many messages it answers with a temporary failure (451) before it takes them. */
export const smtpServerRefusing = (refuse: number) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const received: Array<Received> = []
    let refused = 0
    const server = new SMTPServer({
      authOptional: false,
      allowInsecureAuth: true,
      disabledCommands: ["STARTTLS"],
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
            data: Buffer.concat(chunks).toString("utf8")
          })
          callback()
        })
      }
    })
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.listen(port, "127.0.0.1", () => resume(Effect.void))
      }),
      () => Effect.async<void>((resume) => server.close(() => resume(Effect.void)))
    )
    return { port, received, url: `smtp://svc:secret@127.0.0.1:${port}`, refused: () => refused }
  })

export const smtpServer = smtpServerRefusing(0)

/** A header of a received message (unfolded), if present. */
export const headerOf = (data: string, name: string) => {
  const head = data.split(/\r?\n\r?\n/)[0]!.replace(/\r?\n[ \t]+/g, " ")
  const line = head.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`))
  return line === undefined ? undefined : line.slice(name.length + 1).trim()
}
