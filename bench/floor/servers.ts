/**
 * The three servers bench/http-floor.ts compares, selected by the first argument. Each answers
 * `POST /v1/machines/:id/stop` with a 202 and a small JSON body and does nothing else, so what the
 * bench measures is the HTTP stack alone:
 * - `node`: node:http, reading and parsing the body by hand;
 * - `router`: @effect/platform's HttpRouter on NodeHttpServer;
 * - `api`: an HttpApi endpoint of the same shape as svc's stop (path and payload schemas, a 202
 *   success schema), served by HttpApiBuilder with the tracer off, as src/Http.ts serves svc.
 * Each prints `PORT <n>` once it listens on a free loopback port.
 */
import {
  HttpApi,
  HttpApiBuilder,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpMiddleware,
  HttpRouter,
  HttpServer,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import * as NodeHttp from "node:http"
import type { AddressInfo } from "node:net"

const accepted = (machineId: string) => ({
  operation_id: "0190f0a0-0000-7000-8000-000000000000",
  machine_id: machineId,
  status: "pending"
})

const Accepted = Schema.Struct({ operation_id: Schema.String, machine_id: Schema.String, status: Schema.String })

const Api = HttpApi.make("floor").add(
  HttpApiGroup.make("machines").add(
    HttpApiEndpoint.post("stop", "/v1/machines/:id/stop")
      .setPath(Schema.Struct({ id: Schema.String }))
      .setPayload(Schema.Struct({ force: Schema.optional(Schema.Boolean) }))
      .addSuccess(Accepted, { status: 202 })
  )
)

const MachinesLive = HttpApiBuilder.group(
  Api,
  "machines",
  (handlers) => handlers.handle("stop", ({ path }) => Effect.succeed(accepted(path.id)))
)

const printPort = Layer.effectDiscard(
  HttpServer.addressFormattedWith((address) => Effect.sync(() => console.log(`PORT ${address.split(":").pop()}`)))
)

const listen = NodeHttpServer.layer(() => NodeHttp.createServer(), { port: 0, host: "127.0.0.1" })

const effectServer = (app: Layer.Layer<never, never, Layer.Layer.Success<typeof listen>>) =>
  Layer.launch(Layer.mergeAll(app, printPort).pipe(Layer.provide(listen))).pipe(NodeRuntime.runMain)

const nodeServer = () => {
  const server = NodeHttp.createServer((request, response) => {
    let body = ""
    request.setEncoding("utf8")
    request.on("data", (chunk: string) => body += chunk)
    request.on("end", () => {
      JSON.parse(body === "" ? "{}" : body)
      const json = JSON.stringify(accepted(request.url!.split("/")[3]!))
      response.writeHead(202, { "content-type": "application/json", "content-length": Buffer.byteLength(json) })
      response.end(json)
    })
  })
  server.listen(0, "127.0.0.1", () => console.log(`PORT ${(server.address() as AddressInfo).port}`))
}

const routerServer = () =>
  effectServer(
    HttpRouter.empty.pipe(
      HttpRouter.post(
        "/v1/machines/:id/stop",
        Effect.flatMap(HttpRouter.RouteContext, (route) =>
          HttpServerResponse.json(accepted(route.params.id!), { status: 202 }))
      ),
      HttpServer.serve(),
      HttpMiddleware.withTracerDisabledWhen(() =>
        true
      )
    )
  )

const apiServer = () =>
  effectServer(
    HttpApiBuilder.serve().pipe(
      Layer.provide(HttpApiBuilder.api(Api).pipe(Layer.provide(MachinesLive))),
      HttpMiddleware.withTracerDisabledWhen(() => true)
    )
  )

const servers: Record<string, () => void> = { node: nodeServer, router: routerServer, api: apiServer }
servers[process.argv[2] ?? "node"]!()
