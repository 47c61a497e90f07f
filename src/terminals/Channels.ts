/**
 * The open terminal WebSockets of this process (channels) and the revocations that end them with
 * the unused tickets: the AccessRevocations port is filled here. It sits with the kernel's ports
 * (src/App.ts KernelLive) because member removal and suspension, below the areas, call it; the
 * WebSocket side (Socket.ts) registers each channel it opens.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { AccessRevocations, type Revoked } from "../kernel/AccessRevocations.js"
import { TerminalsRepo } from "./Repo.js"

/** WebSocket close codes svc uses for a terminal (1000 is the command's exit). */
export const closeCodes = {
  /** The ticket's access was revoked (member removed, organization suspended). */
  revoked: 4403,
  /** The machine stopped or was deleted. */
  machineStopped: 4409,
  /** svc is shutting down. */
  shutdown: 1001
} as const

export interface Channel {
  readonly terminalId: string
  readonly organizationId: string
  readonly userId: string
  readonly machineId: string
  /** Closes the WebSocket (the terminal's session ends with it). */
  readonly close: (code: number, reason: string) => void
}

const make = Effect.gen(function*() {
  const repo = yield* TerminalsRepo
  const open = new Map<string, Channel>()

  const closeWhere = (matches: (channel: Channel) => boolean, code: number, reason: string) =>
    Effect.sync(() => {
      const closing = [...open.values()].filter(matches)
      for (const channel of closing) {
        open.delete(channel.terminalId)
        channel.close(code, reason)
      }
      return closing.length
    })

  const revoke = (organizationId: string, userId: string | null) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const tickets = yield* repo.revokeUnused(organizationId, userId, now)
      const channels = yield* closeWhere(
        (channel) => channel.organizationId === organizationId && (userId === null || channel.userId === userId),
        closeCodes.revoked,
        "access revoked"
      )
      return { tickets_revoked: tickets, channels_revoked: channels } satisfies Revoked
    })

  return {
    /** Registers an open channel; the answer forgets it (at its close). */
    register: (channel: Channel) =>
      Effect.sync(() => {
        open.set(channel.terminalId, channel)
        return () => void open.delete(channel.terminalId)
      }),
    closeMachine: (machineId: string, reason: string) =>
      closeWhere((channel) => channel.machineId === machineId, closeCodes.machineStopped, reason),
    closeAll: (reason: string) => closeWhere(() => true, closeCodes.shutdown, reason),
    /** Whether any channel is open. */
    anyOpen: () => open.size > 0,
    /** How many channels are open on the machine (for tests and the docs' promise). */
    openOn: (machineId: string) => [...open.values()].filter((channel) => channel.machineId === machineId).length,
    revoke
  }
})

export class TerminalChannels
  extends Context.Tag("svc/terminals/TerminalChannels")<TerminalChannels, Effect.Effect.Success<typeof make>>()
{
  static readonly layer = Layer.effect(TerminalChannels, make)
}

/** The AccessRevocations port over the channels. */
export const revocationsLayer = Layer.effect(
  AccessRevocations,
  Effect.map(TerminalChannels, (channels) => ({
    member: (organizationId: string, userId: string) => channels.revoke(organizationId, userId),
    organization: (organizationId: string) => channels.revoke(organizationId, null)
  }))
)
