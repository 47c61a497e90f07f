/**
 * Byte streams to a TCP port inside a machine, for the port proxy (src/ports/Proxy.ts). A
 * machine that shares the host's network (the `process` driver, a sandbox with internet access) is
 * reached at 127.0.0.1; a sandbox with its own network namespace through a relay that nsenter puts
 * in that namespace, piping its stdin and stdout to the port. The relay is the host's node (the
 * machine's `/usr` is the host's, so it is there), run from the host's file system.
 */
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeModule from "node:module"
import * as NodeNet from "node:net"
import * as NodeStream from "node:stream"

/** A socket to 127.0.0.1:`port` of this host's network namespace (connecting; errors come as events). */
export const connectLocal = (port: number): NodeStream.Duplex => NodeNet.connect(port, "127.0.0.1")

/** Whether host process `pid` is in svc's own network namespace (then 127.0.0.1 is the same). */
export const sharesHostNetwork = (pid: number) => {
  try {
    return NodeFs.readlinkSync(`/proc/${pid}/ns/net`) === NodeFs.readlinkSync("/proc/self/ns/net")
  } catch {
    return false
  }
}

/** Inodes of the sockets listening on `port` on loopback or every address (IPv4 and IPv6). */
const listeningInodes = (port: number) => {
  const inodes = new Set<string>()
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0")
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = ""
    try {
      text = NodeFs.readFileSync(table, "utf8")
    } catch {
      continue
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/)
      const local = fields[1]
      // st 0A is LISTEN; fields[9] is the socket's inode.
      if (local === undefined || fields[3] !== "0A" || !local.endsWith(`:${hexPort}`)) continue
      const address = local.slice(0, local.lastIndexOf(":"))
      const loopbackOrAny = /^(0+|0100007F|0+FFFF00000000(0100007F|0+)|0+10*)$/i.test(address) ||
        address === "00000000000000000000000001000000"
      if (loopbackOrAny && fields[9] !== undefined) inodes.add(fields[9])
    }
  }
  return inodes
}

/**
 * Whether one of `pids` holds the socket listening on `port`. A machine that shares the host's
 * network must not become a door to the host's own loopback services (svc itself, a database that
 * listens on 127.0.0.1): the proxy only reaches a port that a process of the machine serves.
 */
export const servedBy = (port: number, pids: ReadonlyArray<number>) => {
  const inodes = listeningInodes(port)
  if (inodes.size === 0) return false
  for (const pid of pids) {
    let fds: Array<string> = []
    try {
      fds = NodeFs.readdirSync(`/proc/${pid}/fd`)
    } catch {
      continue
    }
    for (const fd of fds) {
      try {
        const target = NodeFs.readlinkSync(`/proc/${pid}/fd/${fd}`)
        if (target.startsWith("socket:[") && inodes.has(target.slice(8, -1))) return true
      } catch {
        // closed meanwhile
      }
    }
  }
  return false
}

/** Whether this process is svc's single executable (Node's `node:sea`; absent before Node 20.12). */
const isSingleExecutable = (() => {
  try {
    return (NodeModule.createRequire(import.meta.url)("node:sea") as { isSea: () => boolean }).isSea()
  } catch {
    return false
  }
})()

// Exits non-zero when the port refuses, so the caller sees the stream end without an answer.
const relayScript = `const s = require("net").connect(Number(process.argv[1]), "127.0.0.1");
s.on("error", () => process.exit(1));
process.stdin.pipe(s);
s.pipe(process.stdout);`

/**
 * A stream to `port` in the network namespace of host process `pid`. Only that namespace is
 * entered: svc made it, in the host's user namespace, and the relay stays outside the machine's
 * user and pid namespaces (nothing in the machine can see it), with nothing of svc's environment.
 */
export const connectThroughNamespace = (nsenter: string, pid: number, port: number): NodeStream.Duplex => {
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin" }
  // The single executable takes no `-e`: its entry (src/cli/single.ts) relays when told so by env.
  const relay = isSingleExecutable
    ? NodeChild.spawn(nsenter, [`--target=${pid}`, "--net", "--", process.execPath], {
      stdio: ["pipe", "pipe", "ignore"],
      env: { ...env, SVC_RELAY_PORT: String(port) }
    })
    : NodeChild.spawn(
      nsenter,
      [`--target=${pid}`, "--net", "--", process.execPath, "-e", relayScript, String(port)],
      { stdio: ["pipe", "pipe", "ignore"], env }
    )
  const stream = NodeStream.Duplex.from({ readable: relay.stdout, writable: relay.stdin })
  relay.on("error", (error) => stream.destroy(error))
  // Ending the stream early (a client gone) must not leave the relay behind.
  stream.on("close", () => {
    if (relay.exitCode === null) relay.kill("SIGKILL")
  })
  return stream
}
