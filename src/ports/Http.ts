/**
 * The ports area's route in the machines group: `POST /v1/machines/{id}/ports/{port}/tokens`.
 * The proxy itself is a raw route (src/ports/Proxy.ts).
 */
import { Effect } from "effect"
import { currentOrganization, currentUser } from "../kernel/http/CallerContext.js"
import { iso } from "../kernel/http/Dto.js"
import { PortTokens } from "./PortTokens.js"

export const portTokenRoute = Effect.map(
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
