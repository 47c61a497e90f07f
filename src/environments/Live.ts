/**
 * The environments area over its repository (provided here only), and its answer to the machine
 * engine's MachineEnvironments port, which the runtime needs before any area exists.
 */
import { Layer } from "effect"
import { Environments } from "./Environments.js"
import { EnvironmentsRepo } from "./Repo.js"

export { MachineEnvironmentsLive } from "./Variables.js"

export const EnvironmentsLive = Environments.layer.pipe(Layer.provide(EnvironmentsRepo.layer))
