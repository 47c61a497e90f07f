/**
 * The networks of running machines (Network.ts does the work): internet access turned on and off
 * in a running machine, and brought back to what each run record asks at svc's start and when the
 * host's addresses change.
 */
import { Effect } from "effect"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { waitFor } from "../HostProcess.js"
import { DriverError } from "../MachineDriver.js"
import { attempt, type MachinePaths, writeAtomic } from "../MachineFiles.js"
import { sharesHostNetwork } from "../PortConnections.js"
import * as Network from "./Network.js"
import type { RunRecord } from "./RunRecord.js"
import type { Tools } from "./Tools.js"

export interface NetworksContext {
  readonly dataDir: string
  readonly tools: Tools
  readonly network: Network.NetworkSettings
  readonly paths: (id: string) => MachinePaths
  readonly netOf: (id: string) => Network.NetPaths
  readonly running: (id: string) => RunRecord | undefined
  readonly booted: Map<string, RunRecord>
}

export const machineNetworks = (context: NetworksContext) => {
  const { booted, netOf, network, paths, running, tools } = context
  /**
   * Brings the running machine's network to `enabled`: the wish is recorded in run.json first (so
   * a new svc converges to it, and a re-applied operation finds it), then net.sh acts, then the
   * state is observed. A boot by an older svc is left alone: its namespace may be the host's.
   */
  const setNetwork = (id: string, record: RunRecord, enabled: boolean, reloadRules = false) =>
    netLock(id).withPermits(1)(Effect.gen(function*() {
      const net = netOf(id)
      if (record.internet === undefined || record.netns === undefined) {
        const has = sharesHostNetwork(record.pid)
        if (has === enabled) return
        return yield* new DriverError({
          message:
            `machine ${id} was booted by an earlier svc without a network of its own: restart it to change its internet access`
        })
      }
      const observed = () => enabled ? Network.attached(net, record.pid) : Network.detached(net, record.pid)
      if (record.internet === enabled && observed() && !(enabled && reloadRules)) return
      if (record.internet !== enabled) {
        const updated: RunRecord = { ...record, internet: enabled }
        yield* attempt("network", () => writeAtomic(paths(id).run, JSON.stringify(updated)))
        booted.set(id, updated)
      }
      let gone = () => true
      if (enabled) {
        yield* attempt("network", () => Network.writeFiles(net, network))
        yield* Network.attach(tools, network, net, record.pid, record.netns)
      } else {
        gone = yield* attempt("network", () => Network.killSlirp(net))
      }
      if (!(yield* waitFor(() => gone() && observed(), 2_000))) {
        return yield* new DriverError({
          message: `machine ${id}: internet access ${enabled ? "on" : "off"} not observed`
        })
      }
    }))

  /** One network change at a time per machine: the start-up sweep may meet a re-applied operation. */
  const netLocks = new Map<string, Effect.Semaphore>()
  const netLock = (id: string) => {
    let lock = netLocks.get(id)
    if (lock === undefined) netLocks.set(id, lock = Effect.unsafeMakeSemaphore(1))
    return lock
  }

  /**
   * At svc's start: every running machine gets the network its run record asks for (an internet
   * path that died while svc was away is rebuilt), and the slirp4netns of machines that ended
   * meanwhile are ended.
   */
  const machineIds = attempt("network", () => {
    try {
      return NodeFs.readdirSync(NodePath.join(context.dataDir, "machines"))
    } catch {
      return []
    }
  })

  const reconcileNetworks = Effect.gen(function*() {
    // A machine that boots meanwhile (an operation resumed) may be starting its slirp4netns.
    const began = yield* attempt("network", Network.ticksNow)
    const ids = yield* machineIds
    for (const id of ids) {
      const record = yield* attempt("network", () => running(id))
      if (record === undefined) yield* attempt("network", () => Network.killSlirp(netOf(id), began))
      else if (record.internet !== undefined) yield* setNetwork(id, record, record.internet)
    }
  })

  /**
   * When the host's addresses changed (an interface came up, an address was added), the rules of
   * every running machine with internet access are written anew, so that the host stays closed on
   * its new addresses too. The layer runs it every 10 seconds; each machine's failure is logged.
   */
  let hostAddresses = Network.hostAddresses().join(" ")
  const refreshNetworks = Effect.gen(function*() {
    const now = Network.hostAddresses().join(" ")
    if (now === hostAddresses) return
    hostAddresses = now
    for (const id of yield* machineIds) {
      const record = yield* attempt("network", () => running(id))
      if (record?.internet !== true) continue
      yield* setNetwork(id, record, true, true).pipe(
        Effect.catchAll((error) =>
          Effect.logWarning(`machine ${id}: its rules for the host's new addresses: ${error.message}`)
        )
      )
    }
  }).pipe(Effect.catchAll((error) => Effect.logWarning(`machine networks: ${error.message}`)))

  return { setNetwork, netLock, machineIds, reconcileNetworks, refreshNetworks }
}
