/**
 * The machine driver the configuration names (`SVC_RUNTIME`). `sandbox` is the default; `process`
 * is for development hosts without bubblewrap; `docker` is accepted by the configuration (the spec
 * names it) but has no driver in this build yet, so it is served like a host without bubblewrap.
 *
 * A host that cannot run sandboxes (no bubblewrap, no namespaces) still serves everything else:
 * svc starts, says why in the log, and machine changes answer 503 `runtime_unavailable` until the
 * host is fixed and svc restarted. So `npm start` works on a fresh machine.
 */
import { Effect, Layer } from "effect"
import { agentsDirOf, AppConfig } from "../kernel/config/AppConfig.js"
import { sizesOf } from "../kernel/config/MachineSizes.js"
import { DriverError, MachineDriver, type MachineDriverShape, NotRunning } from "./MachineDriver.js"
import * as ProcessDriver from "./process/ProcessDriver.js"
import * as SandboxDriver from "./sandbox/SandboxDriver.js"

export const layer = Layer.unwrapEffect(Effect.map(AppConfig, (config) => {
  switch (config.runtime) {
    case "sandbox":
      return SandboxDriver.layer({
        dataDir: config.dataDir,
        agentsDir: agentsDirOf(config),
        network: config.machineNetwork,
        sizes: sizesOf(config)
      }).pipe(
        Layer.catchAll((error) => unavailableLayer(error.message))
      )
    case "process":
      return ProcessDriver.layer({ dataDir: config.dataDir, agentsDir: agentsDirOf(config) })
    case "docker":
      return unavailableLayer("SVC_RUNTIME=docker: the docker driver is not part of this build; use sandbox or process")
  }
}))

/** svc without machines: it says why once at start; machine changes answer 503 `runtime_unavailable`. */
const unavailableLayer = (reason: string) =>
  Layer.effect(MachineDriver, Effect.as(Effect.logWarning(`machines unavailable: ${reason}`), unavailable(reason)))

/** The stand-in driver of a host that cannot run machines: every action fails with the reason. */
const unavailable = (reason: string): MachineDriverShape => {
  const fail = () => Effect.fail(new DriverError({ message: reason }))
  return {
    name: "unavailable",
    isolates: false,
    unavailable: reason,
    create: fail,
    start: fail,
    stop: fail,
    destroy: fail,
    observe: fail,
    setInternetAccess: fail,
    exec: fail,
    // Nothing runs on such a host, so no port answers.
    connectPort: (id) => Effect.fail(new NotRunning({ machineId: id })),
    diskPath: (id) => `/nonexistent/${id}`,
    freeze: fail,
    thaw: fail,
    cpuSeconds: fail
  }
}
