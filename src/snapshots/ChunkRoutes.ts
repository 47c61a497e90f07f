/**
 * The holder's side of copying snapshots between hosts (src/snapshots/store/ChunkCopy.ts): a
 * snapshot's manifest and its chunks, from this node's store, to other nodes only. Not part of the
 * public API (no OpenAPI entry): a request needs a valid `svc-node` signature of its method and path
 * (src/kernel/crypto/NodeRequests.ts); anything else, and any name that is not a well-formed chunk
 * key or snapshot id of something in the store, is answered 404 alike. Chunks are served whatever
 * the organization: a key says nothing without the bytes, and only nodes of this service ask.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { nodeHeader, verifyNodeRequest } from "../kernel/crypto/NodeRequests.js"
import { SecretBox } from "../kernel/crypto/SecretBox.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { servedBytes } from "./store/ChunkCopy.js"
import { SnapshotStore } from "./store/SnapshotStore.js"

export const ChunkRoutesLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const store = yield* SnapshotStore
    const box = yield* SecretBox
    const serve = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const sender = yield* verifyNodeRequest(request.method, request.url, request.headers[nodeHeader])
      const bytes = Option.isNone(sender)
        ? undefined
        : yield* Effect.promise(() => servedBytes(store, request.url))
      if (bytes === undefined) return yield* new ResourceNotFound({ detail: "Not found" })
      return HttpServerResponse.uint8Array(bytes, { contentType: "application/octet-stream" })
    }).pipe(Effect.provideService(SecretBox, box))
    yield* router.get("/internal/snapshots/:snapshot_id/manifest", serve)
    yield* router.get("/internal/chunks/:tier/:key", serve)
  })
)
