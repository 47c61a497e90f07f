/** The ports area: port tokens over their repository (provided here only). The proxy is a raw route (src/Http.ts). */
import { Layer } from "effect"
import { PortTokens } from "./PortTokens.js"
import { PortTokensRepo } from "./Repo.js"

export const PortsLive = PortTokens.layer.pipe(Layer.provide(PortTokensRepo.layer))
