/**
 * The ports area: who may open a port (Ports) and port tokens over their repository (provided here
 * only). The proxy is a raw route (src/Http.ts).
 */
import { Layer } from "effect"
import { Ports } from "./Ports.js"
import { PortTokens } from "./PortTokens.js"
import { PortTokensRepo } from "./Repo.js"

export const PortsLive = Ports.layer.pipe(
  Layer.provideMerge(PortTokens.layer),
  Layer.provide(PortTokensRepo.layer)
)
