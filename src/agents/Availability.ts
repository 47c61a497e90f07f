/**
 * Whether an agent can run on this server: part of this build, offered by the driver (a tools
 * folder in its machines) and installed by `svc agents install`; and what each agent offers.
 */
import { Effect } from "effect"
import { MachineDriver } from "../drivers/MachineDriver.js"
import { agentsDirOf, AppConfig } from "../kernel/config/AppConfig.js"
import type { AgentProviderShape } from "./providers/AgentProvider.js"
import { allProviders, providers } from "./providers/Providers.js"
import { installed, readVersions } from "./providers/Tools.js"

/** One agent of this build as this server offers it. */
export interface ProviderListing {
  readonly provider: AgentProviderShape
  readonly available: boolean
  /** What the installed agent reports as its version. */
  readonly version: string | null
}

export const makeAvailability = Effect.gen(function*() {
  const config = yield* AppConfig
  const driver = yield* MachineDriver
  const agentsDir = agentsDirOf(config)

  const providerOf = (key: string): AgentProviderShape | undefined => providers[key as keyof typeof providers]

  /** Why the agent cannot run here, or undefined when it can. */
  const unavailable = (key: string) => {
    const provider = providerOf(key)
    if (provider === undefined) return `the ${key} agent is not part of this build`
    if (driver.toolsPath === undefined) return `the ${driver.name} driver offers no agents`
    if (!installed(agentsDir, provider)) return `the ${key} agent is not installed: run svc agents install`
    return undefined
  }

  return {
    providerOf,
    unavailable,
    /** Every agent of this build, with whether it can run here and its installed version. */
    listing: Effect.sync((): ReadonlyArray<ProviderListing> => {
      const versions = readVersions(agentsDir)
      return allProviders().map((provider) => ({
        provider,
        available: unavailable(provider.key) === undefined,
        version: versions[provider.key] ?? null
      }))
    })
  }
})

export type Availability = Effect.Effect.Success<typeof makeAvailability>
