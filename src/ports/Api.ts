/** Ports' JSON route (api.md "Ports"): port access tokens. Exposing a port is a machine operation (MachinesApi); the proxy is a raw route (Proxy.ts). */
import { HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Roles } from "../kernel/domain/Access.js"
import { Authorization } from "../kernel/http/Authorization.js"
import { RequestBody, Timestamp, Uuid } from "../kernel/http/Dto.js"
import { Endpoint } from "../kernel/http/Endpoint.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { policy } from "../kernel/http/Policy.js"

export const PortNumber = Schema.Int.pipe(Schema.between(1, 65535))

/** A machine's port in a path: `/v1/machines/{id}/ports/{port}`. */
export const PortPath = Schema.Struct({ id: Uuid, port: Schema.NumberFromString.pipe(Schema.compose(PortNumber)) })

export const PortTokenRequest = RequestBody({ expires_in_seconds: Schema.Int.pipe(Schema.between(60, 86400)) })

export const PortToken = Schema.Struct({
  token: Schema.String,
  url: Schema.String,
  expires_at: Timestamp
}).annotations({ identifier: "PortToken" })

export class PortsApi extends HttpApiGroup.make("ports")
  .add(
    Endpoint.post("createPortToken", "/v1/machines/:id/ports/:port/tokens", {
      summary: "Make a port access token",
      description: "A token that opens a private exposed port through the proxy until `expires_at` (header " +
        "`x-svc-port-token` or query `svc_port_token`). Not an operation: answers at once.",
      policy: policy("U", "header", Roles.machineChangers),
      errors: [ResourceNotFound]
    })
      .setPath(PortPath)
      .setPayload(PortTokenRequest)
      .addSuccess(PortToken, { status: 201 })
  )
  .middleware(Authorization)
  .annotate(OpenApi.Description, "Ports: tokens that open a machine's private exposed port through the proxy.")
{}
