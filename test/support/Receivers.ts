/** Webhook receivers for tests: plain HTTP and HTTPS (a self-signed CA made with openssl). */
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeHttp from "node:http"
import * as NodeHttps from "node:https"
import type * as NodeNet from "node:net"
import * as NodePath from "node:path"

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

/** A CA and a certificate for `localhost` and 127.0.0.1 signed by it, in `dir`. */
export const makeCertificates = (dir: string) => {
  const file = (name: string) => NodePath.join(dir, name)
  const openssl = (...args: Array<string>) => NodeChild.execFileSync("openssl", args, { stdio: "ignore" })
  openssl(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "2",
    "-subj",
    "/CN=svc test CA",
    "-keyout",
    file("ca.key"),
    "-out",
    file("ca.pem")
  )
  openssl(
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    "/CN=localhost",
    "-keyout",
    file("server.key"),
    "-out",
    file("server.csr")
  )
  NodeFs.writeFileSync(file("ext.cnf"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
  openssl(
    "x509",
    "-req",
    "-in",
    file("server.csr"),
    "-CA",
    file("ca.pem"),
    "-CAkey",
    file("ca.key"),
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    file("ext.cnf"),
    "-out",
    file("server.pem")
  )
  return { ca: file("ca.pem"), key: file("server.key"), cert: file("server.pem") }
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
