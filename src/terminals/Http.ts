/** The terminals route; the WebSocket itself is a raw upgrade route (Socket.ts). */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { currentOrganization, currentUser } from "../kernel/http/CallerContext.js"
import { iso } from "../kernel/http/Dto.js"
import { buildWithOnly } from "../kernel/Narrow.js"
import { Terminals } from "./Terminals.js"

export const TerminalsHandlers = HttpApiBuilder.group(Api, "terminals", (handlers) =>
  Effect.gen(function*() {
    const terminals = yield* Terminals
    return handlers.handle("createTerminal", ({ path, payload }) =>
      Effect.gen(function*() {
        const organization = yield* currentOrganization
        const user = yield* currentUser
        const made = yield* terminals.create(
          { organizationId: organization.id, userId: user.id },
          path.id.toLowerCase(),
          payload
        )
        return { id: made.id, ticket: made.ticket, url: made.url, expires_at: iso(made.expiresAt) }
      }))
  })).pipe(buildWithOnly(Authorization, Terminals))
