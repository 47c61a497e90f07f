/** Webhook receivers for tests: plain HTTP and HTTPS (with a certificate of the test CA, Tls.ts). */
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodeHttp from "node:http"
import * as NodeHttps from "node:https"
import type * as NodeNet from "node:net"
import { Webhook } from "standardwebhooks"
import { makeCa } from "./Tls.js"

export interface Received {
  readonly headers: Record<string, string>
  readonly body: string
  readonly at: number
}

export interface Receiver {
  readonly url: string
  readonly received: Array<Received>
  /** Answers with this status from now on (default 200); `hang` never answers. */
  mode: number | "hang"
}

const handler = (receiver: Receiver) => (request: NodeHttp.IncomingMessage, response: NodeHttp.ServerResponse) => {
  const chunks: Array<Buffer> = []
  request.on("data", (chunk: Buffer) => chunks.push(chunk))
  request.on("end", () => {
    receiver.received.push({
      headers: request.headers as Record<string, string>,
      body: Buffer.concat(chunks).toString("utf8"),
      at: Date.now()
    })
    if (receiver.mode === "hang") return
    response.writeHead(receiver.mode).end("ok")
  })
}

const listen = (server: NodeHttp.Server, scheme: string, host: string) =>
  Effect.acquireRelease(
    Effect.async<string>((resume) => {
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed(`${scheme}://${host}:${(server.address() as NodeNet.AddressInfo).port}/hook`)))
    }),
    () =>
      Effect.sync(() => {
        server.closeAllConnections()
        server.close()
      })
  )

export const httpReceiver = (mode: Receiver["mode"] = 200) =>
  Effect.gen(function*() {
    const receiver: Receiver = { url: "", received: [], mode }
    const server = NodeHttp.createServer(handler(receiver))
    ;(receiver as { url: string }).url = yield* listen(server, "http", "127.0.0.1")
    return receiver
  })

/** A CA and a certificate for `localhost` and 127.0.0.1 signed by it, in `dir` (files). */
export const makeCertificates = (dir: string) => {
  const ca = makeCa(dir)
  const server = ca.issue("localhost", "127.0.0.1")
  return { ca: ca.caFile, key: server.keyFile, cert: server.certFile }
}

export const httpsReceiver = (certificates: ReturnType<typeof makeCertificates>, mode: Receiver["mode"] = 200) =>
  Effect.gen(function*() {
    const receiver: Receiver = { url: "", received: [], mode }
    const server = NodeHttps.createServer({
      key: NodeFs.readFileSync(certificates.key),
      cert: NodeFs.readFileSync(certificates.cert)
    }, handler(receiver))
    ;(receiver as { url: string }).url = yield* listen(server, "https", "localhost")
    return receiver
  })

/**
 * The webhook-ids a receiver saw per machine (the event's `data.id`), each delivery's signature
 * checked with `secret`: a redelivery must reuse its event's id, so every set holds one.
 */
export const webhookIdsByMachine = (receiver: Receiver, secret: string) => {
  const verifier = new Webhook(secret)
  const idsByMachine = new Map<string, Set<string>>()
  for (const delivery of receiver.received) {
    const payload = verifier.verify(delivery.body, delivery.headers) as { readonly data: { readonly id: string } }
    const ids = idsByMachine.get(payload.data.id) ?? new Set()
    ids.add(delivery.headers["webhook-id"]!)
    idsByMachine.set(payload.data.id, ids)
  }
  return idsByMachine
}
