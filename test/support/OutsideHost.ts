/**
 * An "outside" host for the network tests: a network namespace of the test's own, joined to the
 * host by a veth pair on a TEST-NET-2 /30 (198.51.100.0/24, never routed on the internet), with a
 * private (LAN) address and a link-local one besides (172.31.254.0/24, 169.254.99.0/24: /30s on the
 * same pair, so the host routes them to this namespace and nowhere else), and an
 * HTTP server inside (`/` answers `outside`, `/bytes/<n>` answers n zero bytes) and a DNS server
 * that answers every A question with the outside host's address. Traffic goes only to these
 * addresses and to loopback. Everything is removed with the scope.
 */
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeHttp from "node:http"
import type * as NodeNet from "node:net"
import * as NodeOs from "node:os"

export interface OutsideHost {
  /** The outside host's address (its HTTP server listens on port 80, DNS on 53). */
  readonly address: string
  /** The host's end of the veth pair: one of the host's own addresses. */
  readonly hostAddress: string
  /** The outside host's address in a private range (a "LAN" host). */
  readonly lanAddress: string
  /** The outside host's link-local address (the range of 169.254.169.254). */
  readonly linkLocalAddress: string
  readonly namespace: string
}

const ip = (...args: ReadonlyArray<string>) => {
  const done = NodeChild.spawnSync("ip", args, { encoding: "utf8" })
  if (done.status !== 0) throw new Error(`ip ${args.join(" ")}: ${done.stderr}`)
}

/**
 * A network namespace joined to the host by a veth pair: `<prefix>.base+1` on the host's end and
 * `<prefix>.base+2` inside, per prefix (/30 each). Throws after removing what it made, if a step fails.
 */
export const vethNamespace = (namespace: string, base: number, prefixes: ReadonlyArray<string>) => {
  try {
    ip("netns", "add", namespace)
    ip("link", "add", `${namespace}h`, "type", "veth", "peer", "name", `${namespace}o`)
    ip("link", "set", `${namespace}o`, "netns", namespace)
    for (const prefix of prefixes) {
      ip("addr", "add", `${prefix}.${base + 1}/30`, "dev", `${namespace}h`)
      ip("-n", namespace, "addr", "add", `${prefix}.${base + 2}/30`, "dev", `${namespace}o`)
    }
    ip("link", "set", `${namespace}h`, "up")
    ip("-n", namespace, "link", "set", `${namespace}o`, "up")
    ip("-n", namespace, "link", "set", "lo", "up")
  } catch (error) {
    NodeChild.spawnSync("ip", ["netns", "del", namespace])
    NodeChild.spawnSync("ip", ["link", "del", `${namespace}h`])
    throw error
  }
}

const inUse = () =>
  new Set(Object.values(NodeOs.networkInterfaces()).flatMap((entries) => (entries ?? []).map((entry) => entry.address)))

// The servers inside the namespace: node, the same one that runs the tests.
const servers = `
const http = require("http"), dgram = require("dgram")
const address = process.argv[1]
http.createServer((request, response) => {
  const bytes = /^\\/bytes\\/(\\d+)$/.exec(request.url)
  if (bytes === null) return response.end("outside\\n")
  let left = Number(bytes[1])
  response.setHeader("content-length", left)
  const chunk = Buffer.alloc(1 << 20)
  const more = () => {
    while (left > 0) {
      const part = left >= chunk.length ? chunk : chunk.subarray(0, left)
      left -= part.length
      if (!response.write(part)) return response.once("drain", more)
    }
    response.end()
  }
  more()
}).listen(80, () => {
  const dns = dgram.createSocket("udp4")
  // A question in, the same with one A answer (the outside host) out.
  dns.on("message", (query, peer) => {
    let end = 12
    while (query[end] !== 0) end += query[end] + 1
    end += 5
    const answer = Buffer.concat([
      query.subarray(0, 2), Buffer.from([0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]), query.subarray(12, end),
      Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]), Buffer.from(address.split(".").map(Number))
    ])
    dns.send(answer, peer.port, peer.address)
  })
  dns.bind(53, () => console.log("ready"))
})
`

/** Makes the outside host; scoped: its namespace, veth pair and servers go with the scope. */
export const outsideHost = Effect.acquireRelease(
  Effect.async<OutsideHost & { readonly server: NodeChild.ChildProcess }, Error>((resume) => {
    const tag = `${process.pid.toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`.slice(-8)
    const namespace = `svct-${tag}`
    const used = inUse()
    // A /30 of 198.51.100.0/24 that no interface of the host has.
    const base = [...Array(64).keys()].map((i) => i * 4).sort(() => Math.random() - 0.5)
      .find((n) =>
        !used.has(`198.51.100.${n + 1}`) && !used.has(`172.31.254.${n + 1}`) && !used.has(`169.254.99.${n + 1}`)
      )
    if (base === undefined) return resume(Effect.fail(new Error("no free /30 in 198.51.100.0/24")))
    const hostAddress = `198.51.100.${base + 1}`
    const address = `198.51.100.${base + 2}`
    const lanAddress = `172.31.254.${base + 2}`
    const linkLocalAddress = `169.254.99.${base + 2}`
    try {
      vethNamespace(namespace, base, ["198.51.100", "172.31.254", "169.254.99"])
    } catch (error) {
      return resume(Effect.fail(error as Error))
    }
    const server = NodeChild.spawn("ip", ["netns", "exec", namespace, process.execPath, "-e", servers, address], {
      stdio: ["ignore", "pipe", "inherit"]
    })
    server.stdout.once(
      "data",
      () => resume(Effect.succeed({ address, hostAddress, lanAddress, linkLocalAddress, namespace, server }))
    )
    server.once("exit", (code) => resume(Effect.fail(new Error(`the outside host's servers exited (${code})`))))
  }),
  ({ namespace, server }) =>
    Effect.sync(() => {
      server.kill("SIGKILL")
      // Deleting the namespace deletes its end of the pair, and with it the host's end.
      NodeChild.spawnSync("ip", ["netns", "del", namespace])
      NodeChild.spawnSync("ip", ["link", "del", `${namespace}h`])
    })
)

/** An HTTP server of the test on the host (`host`: 127.0.0.1, or 0.0.0.0 for every address). */
export const hostServer = (host: string, body: string) =>
  Effect.acquireRelease(
    Effect.async<NodeHttp.Server>((resume) => {
      const server = NodeHttp.createServer((_, response) => response.end(body))
      server.listen(0, host, () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.sync(() => server.close())
  ).pipe(Effect.map((server) => (server.address() as NodeNet.AddressInfo).port))

/** The host's own IPv4 addresses (loopback aside). */
export const ownAddresses = () =>
  Object.values(NodeOs.networkInterfaces()).flatMap((entries) =>
    (entries ?? []).filter((entry) => entry.family === "IPv4" && !entry.internal).map((entry) => entry.address)
  )
