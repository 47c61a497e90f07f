/** Terminals (docs/terminals.md): a single-use ticket for a WebSocket carrying a PTY in a running machine. */
import { HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Roles } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { MachineArgument, RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { notRunningErrors } from "../kernel/http/ErrorLists.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { policy } from "../kernel/http/Policy.js"

const Cells = Schema.Int.pipe(Schema.between(1, 1000))

export const TerminalRequest = RequestBody({
  cols: Schema.optionalWith(Cells, { default: () => 80 }),
  rows: Schema.optionalWith(Cells, { default: () => 24 }),
  /** The program and its arguments; the machine's login shell when null or left out. */
  command: Schema.optionalWith(
    Schema.NullOr(Schema.Array(MachineArgument).pipe(Schema.minItems(1), Schema.maxItems(256))),
    { default: () => null }
  )
})

export const TerminalTicket = Schema.Struct({
  id: Uuid,
  ticket: Schema.String,
  url: Schema.String,
  expires_at: Timestamp
}).annotations({ identifier: "TerminalTicket" })

export class TerminalsApi extends HttpApiGroup.make("terminals")
  .add(
    Endpoint.post("createTerminal", "/v1/machines/:id/terminals", {
      summary: "Open a terminal",
      description: "A single-use ticket, valid 60 s, for `url`: a WebSocket carrying a PTY in the running machine " +
        "(`command`, or its login shell) in a session of its own. The terminal's bytes travel as binary frames both " +
        "ways; a text frame `{\"type\":\"resize\",\"cols\":C,\"rows\":R}` resizes it. When the command exits, a text " +
        "frame `{\"type\":\"exit\",\"exit_code\":N}` is sent and the WebSocket closes (1000); it closes with 4409 when " +
        "the machine stops and 4403 when access is revoked. Closing the WebSocket ends the session. `url` holds the " +
        "ticket (query `ticket`); an unknown, used, revoked or expired ticket is refused with 404.",
      policy: policy("U", "header", Roles.machineChangers),
      errors: [ResourceNotFound, ...notRunningErrors]
    })
      .setPath(Schema.Struct({ id: Uuid }))
      .setPayload(TerminalRequest)
      .addSuccess(TerminalTicket, { status: 201 })
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Terminals: a PTY in a running machine over a WebSocket.")
{}
