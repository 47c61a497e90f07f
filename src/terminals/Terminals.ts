/**
 * Terminals (docs/terminals.md): a ticket for a PTY in a running machine, and the terminal itself
 * once the ticket is used. The ticket is random, shown once, stored as its SHA-256, single-use and
 * valid 60 s; using it opens the terminal, which counts as activity for `idle_sleep` while it is
 * open (the IdleHolds port, filled in Live.ts, holds its idle_sleep off) and moves `last_activity_at` at its end.
 */
import { Clock, Context, Effect, Layer, Option, type Queue } from "effect"
import { guestArgv } from "../drivers/Guest.js"
import { type DriverError, MachineDriver, type NotRunning, type TerminalInput } from "../drivers/MachineDriver.js"
import { AppConfig } from "../kernel/config/AppConfig.js"
import { randomToken, sha256 } from "../kernel/crypto/Tokens.js"
import { uuidv7 } from "../kernel/domain/Ids.js"
import { DomainEvents } from "../kernel/events/DomainEvents.js"
import { ResourceNotFound } from "../kernel/http/Errors.js"
import { requireRunning } from "../kernel/http/MachineErrors.js"
import { MachinesRepo } from "../runtime/MachinesRepo.js"
import { type TerminalRow, TerminalsRepo } from "./Repo.js"

/** How long a ticket may wait for its WebSocket. */
export const ticketSeconds = 60

/** The ticket's query parameter on the WebSocket URL. */
export const TICKET_PARAM = "ticket"

/** What runs when the request names no command: the machine's bash as a login shell, else sh. */
export const loginShell = guestArgv("login-shell")

export interface TerminalRequest {
  readonly cols: number
  readonly rows: number
  readonly command: ReadonlyArray<string> | null
}

/** The WebSocket URL of a terminal: the API's base with ws(s), the ticket in the query. */
export const socketUrl = (baseUrl: string, machineId: string, terminalId: string, ticket: string) =>
  `${
    baseUrl.replace(/^http/, "ws").replace(/\/$/, "")
  }/v1/machines/${machineId}/terminals/${terminalId}/socket?${new URLSearchParams({ [TICKET_PARAM]: ticket })}`

const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const machines = yield* MachinesRepo
  const repo = yield* TerminalsRepo
  const driver = yield* MachineDriver
  const bus = yield* DomainEvents

  /** The organization's machine, running now (404 for an unknown one, 409 for any other state). */
  const runningMachine = (organizationId: string, machineId: string) =>
    Effect.gen(function*() {
      const found = yield* machines.findIn(organizationId, machineId)
      if (Option.isNone(found)) return yield* new ResourceNotFound({ detail: "Machine not found" })
      return yield* requireRunning(found.value)
    })

  /** The terminal ended: the row says so, and its end is the machine's latest activity. */
  const ended = (row: TerminalRow) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      yield* repo.close(row.id, now)
      const machine = yield* machines.find(row.machine_id)
      if (Option.isSome(machine) && machine.value.state === "running") {
        yield* machines.update(row.machine_id, { last_activity_at: now })
      }
      // The stop timers skip a machine while its terminal is open: they look again now.
      yield* bus.publish({ _tag: "MachineSettingsChanged", machineId: row.machine_id })
    })

  return {
    create: (
      requester: { readonly organizationId: string; readonly userId: string },
      machineId: string,
      request: TerminalRequest
    ) =>
      Effect.gen(function*() {
        yield* runningMachine(requester.organizationId, machineId)
        const now = yield* Clock.currentTimeMillis
        const ticket = randomToken()
        const id = uuidv7(now)
        const expiresAt = now + ticketSeconds * 1000
        yield* repo.insert({
          id,
          ticket_hash: sha256(ticket),
          organization_id: requester.organizationId,
          machine_id: machineId,
          created_by: requester.userId,
          width_cols: request.cols,
          height_rows: request.rows,
          command: request.command === null ? null : JSON.stringify(request.command),
          created_at: now,
          expires_at: expiresAt,
          opened_at: null,
          closed_at: null,
          revoked_at: null
        })
        return { id, ticket, url: socketUrl(config.baseUrl, machineId, id, ticket), expiresAt }
      }),

    /**
     * Uses a ticket for the terminal `terminalId`: its row once, or none for a ticket that is
     * unknown, used, revoked, expired or of another terminal. A machine that stopped meanwhile
     * ends the terminal at once (409).
     */
    open: (terminalId: string, ticket: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const claimed = yield* repo.claim(sha256(ticket), now)
        if (Option.isNone(claimed)) return Option.none<TerminalRow>()
        const row = claimed.value
        if (row.id !== terminalId) {
          yield* ended(row)
          return Option.none<TerminalRow>()
        }
        yield* Effect.tapError(runningMachine(row.organization_id, row.machine_id), () => ended(row))
        return Option.some(row)
      }),

    /**
     * Runs the terminal's command on a PTY of its machine until it exits, the machine stops
     * (NotRunning) or the effect is interrupted (the WebSocket closed: its whole session ends).
     */
    run: (
      row: TerminalRow,
      input: Queue.Dequeue<TerminalInput>,
      onOutput: (chunk: Uint8Array) => Effect.Effect<void>
    ): Effect.Effect<{ readonly exitCode: number }, DriverError | NotRunning> =>
      driver.exec(row.machine_id, {
        argv: row.command === null ? loginShell : JSON.parse(row.command) as Array<string>,
        env: { TERM: "xterm-256color" },
        input,
        terminal: { cols: row.width_cols, rows: row.height_rows }
      }, (_stream, chunk) => onOutput(chunk)).pipe(Effect.ensuring(ended(row))),

    /** At start: terminals left open by a process that ended are closed (their WebSockets died with it). */
    closeLeftOpen: Effect.flatMap(Clock.currentTimeMillis, repo.closeAllOpen)
  }
})

export class Terminals extends Context.Tag("svc/terminals/Terminals")<Terminals, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Terminals, make)
}
