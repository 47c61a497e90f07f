/**
 * The small shell programs svc runs inside machines (`guest/*.sh`): files checked by CI like the
 * other programs (`sh -n`), embedded as text, run as `/bin/sh -c <text> svc-<name> args...` so
 * that a machine's image needs nothing but a POSIX shell.
 */
import { embeddedText } from "./Embedded.js"

export type GuestProgram = "once" | "write-file" | "key-check" | "login-shell" | "executable"

const texts = new Map<GuestProgram, string>()

/** The argv that runs the guest program `program` with `args` (its `$1`, `$2`, ...). */
export const guestArgv = (program: GuestProgram, ...args: ReadonlyArray<string>): ReadonlyArray<string> => {
  let text = texts.get(program)
  if (text === undefined) {
    text = embeddedText(`guest/${program}.sh`)
    texts.set(program, text)
  }
  return ["/bin/sh", "-c", text, `svc-${program}`, ...args]
}
