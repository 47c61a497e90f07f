/**
 * The machine driver the configuration names (`SVC_RUNTIME`). `sandbox` is the default; `process`
 * is for development hosts without bubblewrap; `docker` is accepted by the configuration (the spec
 * names it) but has no driver in this build yet, so it stops the start with one clear line.
 */
import { Effect, Layer } from "effect"
import { AppConfig } from "../config/AppConfig.js"
import * as ProcessDriver from "./process/ProcessDriver.js"
import * as SandboxDriver from "./sandbox/SandboxDriver.js"

export class DriverUnavailable extends Error {
  override readonly name = "DriverUnavailable"
}

export const layer = Layer.unwrapEffect(Effect.map(AppConfig, (config) => {
  switch (config.runtime) {
    case "sandbox":
      return SandboxDriver.layer({ dataDir: config.dataDir })
    case "process":
      return ProcessDriver.layer({ dataDir: config.dataDir })
    case "docker":
      return Layer.die(
        new DriverUnavailable("SVC_RUNTIME=docker: the docker driver is not part of this build; use sandbox or process")
      )
  }
}))
