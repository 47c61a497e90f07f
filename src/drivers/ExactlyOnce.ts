/**
 * Running a command in a machine at most once per operation, even across a crash of svc: the
 * owner of the claim protocol (docs/drivers.md "Exactly once: the claim protocol"). The wrapper
 * guest/once.sh is its reference implementation; the launcher (launcher/launcher.pl `claim`) keeps
 * the same files on its common path, and test/drivers/launcher.test.ts runs each against the other.
 */
import { guestArgv } from "./Guest.js"

/** guest/once.sh's exit when the run was lost (its claim's shell gone, no exit written). */
export const lostExitCode = 255

/** `argv`, run once for `once` when given (an ExecRequest's field), by the wrapper. */
export const wrapOnce = (argv: ReadonlyArray<string>, once: string | undefined) =>
  once === undefined ? argv : onceArgv(once, argv)

/** The argv that runs `argv` once for `operationId` (the launcher strips its first five). */
export const onceArgv = (operationId: string, argv: ReadonlyArray<string>): ReadonlyArray<string> =>
  guestArgv("once", operationId, ...argv)
