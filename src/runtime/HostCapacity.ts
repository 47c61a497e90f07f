/**
 * The host's capacity: at most `maxRunning` machines run on this host at once, across every
 * organization. A boot that finds the host full waits in the start queue (its operation stays
 * `pending` and shows `starting_soon`): paid organizations first, then in order of queueing. It is
 * admitted when a machine stops, and fails with `no_capacity` once it has waited `queueSeconds`.
 *
 * Occupied slots are the machines the table says run, plus the boots admitted here that have not
 * settled yet (a booting machine is still `stopped` in the table). The queue lives in memory; the
 * operation row keeps `queued_at` and the expiry, so a restart keeps both.
 */
import { Clock, Context, Deferred, Effect, Layer } from "effect"
import { AppConfig, hostSettingsOf } from "../kernel/config/AppConfig.js"
import { MachinesRepo } from "./MachinesRepo.js"

export type QueuePriority = "paid" | "trial"

/** A boot waiting for a slot. */
export interface QueuedBoot {
  readonly operationId: string
  readonly machineId: string
  readonly priority: QueuePriority
  readonly queuedAt: number
  readonly expiresAt: number
  /** Acceptance order (the operations table's global sequence): the order within a priority. */
  readonly seq: number
}

interface Waiter extends QueuedBoot {
  readonly admitted: Deferred.Deferred<void>
}

/**
 * Paid first, then acceptance order. Not the time a boot reached the queue: the actors of two boots
 * accepted one after the other run concurrently, so the later one may reach the queue first.
 */
const before = (a: QueuedBoot, b: QueuedBoot) =>
  (a.priority === b.priority ? 0 : a.priority === "paid" ? -1 : 1) || a.seq - b.seq

export interface HostCapacityShape {
  readonly maxRunning: number
  readonly queueSeconds: number
  /** Takes a slot for the machine at once when one is free and nobody waits; false otherwise. */
  readonly tryAdmit: (machineId: string) => Effect.Effect<boolean>
  /** Waits in the queue until the machine is admitted, or answers `expired` at `expiresAt`. */
  /**
   * Waits for a slot. `queued` runs once the boot holds its place in the queue, before any slot is
   * handed out: whoever then reads the boot as queued finds its place too.
   */
  readonly wait: (boot: QueuedBoot, queued?: Effect.Effect<void>) => Effect.Effect<"admitted" | "expired">
  /** The admitted boot settled: from now on the table counts the machine if it runs. */
  readonly release: (machineId: string) => Effect.Effect<void>
  /** A machine may have stopped: admits waiting boots while slots are free. */
  readonly pump: Effect.Effect<void>
  /** 1-based place of a waiting operation in the queue, if it waits. */
  readonly positionOf: (operationId: string) => number | undefined
}

export class HostCapacity extends Context.Tag("svc/runtime/HostCapacity")<HostCapacity, HostCapacityShape>() {}

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const { capacity: host } = config
  const { hostId } = hostSettingsOf(config)
  const machines = yield* MachinesRepo
  const admitted = new Set<string>()
  let waiters: Array<Waiter> = []
  // One admission decision at a time, so two boots cannot take the last slot.
  const lock = yield* Effect.makeSemaphore(1)

  const occupied = Effect.map(machines.runningIds(hostId), (ids) => {
    const slots = new Set(ids)
    for (const id of admitted) slots.add(id)
    return slots
  })

  const admitWaiting = lock.withPermits(1)(Effect.gen(function*() {
    if (waiters.length === 0) return
    const slots = yield* occupied
    while (waiters.length > 0 && slots.size < host.maxRunning) {
      const next = waiters.shift()!
      admitted.add(next.machineId)
      slots.add(next.machineId)
      yield* Deferred.succeed(next.admitted, undefined)
    }
  }))
  // Every operation's end pumps: with nobody waiting (nearly always) it takes no lock. A boot that
  // starts waiting later pumps itself.
  const pump = Effect.suspend(() => waiters.length === 0 ? Effect.void : admitWaiting)

  const tryAdmit = (machineId: string) =>
    lock.withPermits(1)(Effect.gen(function*() {
      const slots = yield* occupied
      if (slots.has(machineId)) {
        admitted.add(machineId)
        return true
      }
      if (waiters.length > 0 || slots.size >= host.maxRunning) return false
      admitted.add(machineId)
      return true
    }))

  const leave = (waiter: Waiter) =>
    lock.withPermits(1)(Effect.gen(function*() {
      waiters = waiters.filter((w) => w !== waiter)
      // Admitted while it was giving up: keep the slot it was handed.
      return yield* Deferred.isDone(waiter.admitted)
    }))

  const wait = (boot: QueuedBoot, queued: Effect.Effect<void> = Effect.void) =>
    Effect.gen(function*() {
      const waiter: Waiter = { ...boot, admitted: yield* Deferred.make<void>() }
      yield* lock.withPermits(1)(Effect.sync(() => {
        waiters = [...waiters, waiter].sort(before)
      }))
      yield* queued
      yield* pump
      const now = yield* Clock.currentTimeMillis
      const outcome = yield* Effect.raceFirst(
        Effect.as(Deferred.await(waiter.admitted), "admitted" as const),
        Effect.as(Effect.sleep(Math.max(0, boot.expiresAt - now)), "expired" as const)
      ).pipe(Effect.onInterrupt(() => leave(waiter)))
      if (outcome === "admitted") return outcome
      return (yield* leave(waiter)) ? "admitted" as const : "expired" as const
    })

  return HostCapacity.of({
    maxRunning: host.maxRunning,
    queueSeconds: host.queueSeconds,
    tryAdmit,
    wait,
    release: (machineId) => Effect.zipRight(Effect.sync(() => admitted.delete(machineId)), pump),
    pump,
    positionOf: (operationId) => {
      const index = waiters.findIndex((w) => w.operationId === operationId)
      return index === -1 ? undefined : index + 1
    }
  })
})

export const layer = Layer.effect(HostCapacity, make)
