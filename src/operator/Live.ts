/**
 * The operator area: suspensions, the abuse guard and its flags, over its repository (provided here
 * only). `OperatorStandingLive` fills the kernel's OrganizationStanding port (src/App.ts KernelLive).
 */
import { Layer } from "effect"
import { AbuseFlags } from "./AbuseFlags.js"
import { OperatorRepo } from "./Repo.js"
import { standingLayer, Suspensions } from "./Suspensions.js"
import * as Worker from "./Worker.js"

export const OperatorLive = Worker.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(Suspensions.layer, AbuseFlags.layer)),
  Layer.provide(OperatorRepo.layer)
)

export const OperatorStandingLive = standingLayer.pipe(Layer.provide(OperatorRepo.layer))
