import { Effect } from "effect"
import * as NodeFs from "node:fs"
import { anthropicServer, openaiServer } from "../test/support/ModelServers.js"
Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const s = yield* openaiServer
  const a = yield* anthropicServer
  NodeFs.writeFileSync("/tmp/probe/oai-url", s.url)
  NodeFs.writeFileSync("/tmp/probe/url", a.url)
  yield* Effect.never
})))
