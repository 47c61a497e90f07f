/**
 * Byte streams to a TCP port inside a machine, for the port proxy (src/http/PortProxy.ts). A
 * machine that shares the host's network (the `process` driver, a sandbox with internet access) is
 * reached at 127.0.0.1; a sandbox with its own network namespace through a relay that nsenter puts
 * in that namespace, piping its stdin and stdout to the port. The relay is the host's node (the
 * machine's `/usr` is the host's, so it is there), run from the host's file system.
 */
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
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

// Exits non-zero when the port refuses, so the caller sees the stream end without an answer.
const relayScript = `const s = require("net").connect(Number(process.argv[1]), "127.0.0.1");
s.on("error", () => process.exit(1));
process.stdin.pipe(s);
s.pipe(process.stdout);`

/**
 * A stream to `port` in the network namespace of host process `pid`. The user namespace is entered
 * too: the machine's network namespace belongs to it, and only its root may join.
 */
export const connectThroughNamespace = (nsenter: string, pid: number, port: number): NodeStream.Duplex => {
  const relay = NodeChild.spawn(
    nsenter,
    [`--target=${pid}`, "--user", "--net", "--", process.execPath, "-e", relayScript, String(port)],
    { stdio: ["pipe", "pipe", "ignore"] }
  )
  const stream = NodeStream.Duplex.from({ readable: relay.stdout, writable: relay.stdin })
  relay.on("error", (error) => stream.destroy(error))
  // Ending the stream early (a client gone) must not leave the relay behind.
  stream.on("close", () => {
    if (relay.exitCode === null) relay.kill("SIGKILL")
  })
  return stream
}
