/** A loopback port free at the time of asking (the kernel's choice for port 0). */
import { Effect } from "effect"
import * as NodeNet from "node:net"

export const freePort = Effect.async<number>((resume) => {
  const server = NodeNet.createServer()
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as NodeNet.AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})
