/**
 * A webhook receiver on an address the SSRF guard accepts: an HTTPS server on port 443 inside a
 * network namespace of the test's own, joined to the host by a veth pair. Its public address is a
 * /30 of 192.52.193.0/24, the AMT relay anycast block (RFC 7450): globally reachable unicast, so the
 * guard (src/kernel/http/Outbound.ts) takes it for the internet, and nothing on a test machine talks
 * to it otherwise; the host routes that /30 to the namespace while the test runs. The same server
 * also answers on a private address (a /30 of 172.31.253.0/24 on the same pair), a LAN host the
 * guard must refuse. Its certificate, for both addresses, comes from the test's CA. Each request
 * is reported on the server's stdout; everything is removed with the scope.
 */
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeOs from "node:os"
import * as NodeReadline from "node:readline"
import { vethNamespace } from "./OutsideHost.js"
import type { TestCa } from "./Tls.js"

export interface PublicReceiver {
  /** The receiver's public address (the guard accepts it) and its URL on port 443. */
  readonly address: string
  readonly url: string
  /** The same server on a private (LAN) address. */
  readonly lanAddress: string
  readonly received: Array<{ readonly headers: Record<string, string>; readonly body: string }>
}

// The server inside the namespace: node, the same one that runs the tests.
const server = `
const https = require("https"), fs = require("fs")
const [key, cert] = process.argv.slice(1).map((file) => fs.readFileSync(file))
https.createServer({ key, cert }, (request, response) => {
  const chunks = []
  request.on("data", (chunk) => chunks.push(chunk))
  request.on("end", () => {
    console.log(JSON.stringify({ headers: request.headers, body: Buffer.concat(chunks).toString("utf8") }))
    response.end("ok")
  })
}).listen(443, () => console.log("ready"))
`

/** Starts the receiver with a certificate of `ca`; scoped. */
export const publicReceiver = (ca: TestCa) =>
  Effect.acquireRelease(
    Effect.async<PublicReceiver & { readonly namespace: string; readonly child: NodeChild.ChildProcess }, Error>(
      (resume) => {
        const tag = `${process.pid.toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`.slice(-8)
        const namespace = `svcw-${tag}`
        const used = new Set(
          Object.values(NodeOs.networkInterfaces()).flatMap((entries) => (entries ?? []).map((entry) => entry.address))
        )
        const base = [...Array(64).keys()].map((i) => i * 4).sort(() => Math.random() - 0.5)
          .find((n) => !used.has(`192.52.193.${n + 1}`) && !used.has(`172.31.253.${n + 1}`))
        if (base === undefined) return resume(Effect.fail(new Error("no free /30 in 192.52.193.0/24")))
        const address = `192.52.193.${base + 2}`
        const lanAddress = `172.31.253.${base + 2}`
        let certificate
        try {
          certificate = ca.issue(address, lanAddress)
          vethNamespace(namespace, base, ["192.52.193", "172.31.253"])
        } catch (error) {
          return resume(Effect.fail(error as Error))
        }
        const child = NodeChild.spawn(
          "ip",
          ["netns", "exec", namespace, process.execPath, "-e", server, certificate.keyFile, certificate.certFile],
          { stdio: ["ignore", "pipe", "inherit"] }
        )
        const received: PublicReceiver["received"] = []
        NodeReadline.createInterface({ input: child.stdout }).on("line", (line) => {
          if (line === "ready") {
            return resume(
              Effect.succeed({ address, url: `https://${address}/hook`, lanAddress, received, namespace, child })
            )
          }
          received.push(JSON.parse(line))
        })
        child.once("exit", (code) => resume(Effect.fail(new Error(`the receiver exited (${code})`))))
      }
    ),
    ({ child, namespace }) =>
      Effect.sync(() => {
        child.kill("SIGKILL")
        // Deleting the namespace deletes its end of the pair, and with it the host's end.
        NodeChild.spawnSync("ip", ["netns", "del", namespace])
        NodeChild.spawnSync("ip", ["link", "del", `${namespace}h`])
      })
  ).pipe(
    Effect.map(({ address, lanAddress, received, url }): PublicReceiver => ({ address, lanAddress, received, url }))
  )
