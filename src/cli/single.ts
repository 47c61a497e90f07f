/**
 * The entry of the single executable (bin/build.mjs --single): the svc command, plus the one job
 * svc asks of a plain `node -e` elsewhere, relaying a machine port's stream from inside its network
 * namespace (src/drivers/PortConnections.ts), which the executable does when SVC_RELAY_PORT is set.
 */
import * as NodeNet from "node:net"

const relayPort = process.env.SVC_RELAY_PORT
if (relayPort !== undefined) {
  const socket = NodeNet.connect(Number(relayPort), "127.0.0.1")
  socket.on("error", () => process.exit(1))
  process.stdin.pipe(socket)
  socket.pipe(process.stdout)
} else {
  void import("./main.js")
}
