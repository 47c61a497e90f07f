/**
 * The ports group: `POST /v1/machines/{id}/ports/{port}/tokens`. The proxy itself is a raw route
 * (src/ports/Proxy.ts).
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { currentOrganization, currentUser } from "../kernel/http/CallerContext.js"
import { iso } from "../kernel/http/Dto.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import { PortTokens } from "./PortTokens.js"

const portTokenRoute = Effect.map(
  PortTokens,
  (tokens) => (machineId: string, port: number, expiresInSeconds: number) =>
    Effect.gen(function*() {
      const organization = yield* currentOrganization
      const user = yield* currentUser
      const made = yield* tokens.create(
        { organizationId: organization.id, userId: user.id },
        machineId,
        port,
        expiresInSeconds
      )
      return { token: made.token, url: made.url, expires_at: iso(made.expiresAt) }
    })
)

export const PortsHandlers = HttpApiBuilder.group(
  Api,
  "ports",
  (handlers) =>
    Effect.map(
      portTokenRoute,
      (portToken) =>
        handlers.handle("createPortToken", ({ path, payload }) =>
          portToken(path.id, path.port, payload.expires_in_seconds))
    )
).pipe(buildWithOnly(Authorization, PortTokens))
