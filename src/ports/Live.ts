/**
 * The ports area: who may open a port (Ports) and port tokens over their repository (provided here
 * only). The proxy is a raw route (src/Http.ts).
 */
import { Effect, Layer } from "effect"
import * as Sweeps from "../kernel/sql/Sweeps.js"
import { Ports } from "./Ports.js"
import { PortTokens } from "./PortTokens.js"
import { PortTokensRepo } from "./Repo.js"

export const PortsLive = Ports.layer.pipe(
  Layer.provideMerge(PortTokens.layer),
  Layer.provide(PortTokensRepo.layer)
)

/** Port tokens past their expiry are deleted every hour (a worker: the server's, not the tests' areas). */
export const PortsSweepLive = Sweeps.hourly(
  "port tokens",
  (now) => Effect.flatMap(PortTokensRepo, (repo) => repo.deleteExpired(now))
).pipe(Layer.provide(PortTokensRepo.layer))
