/**
 * Running a command in a machine at most once per operation, even across a crash of svc: the
 * owner of the claim protocol (docs/drivers.md "Exactly once: the claim protocol"). The wrapper
 * below is its reference implementation; the launcher (launcher/launcher.pl `claim`) keeps the
 * same files on its common path, and test/drivers/launcher.test.ts runs each against the other.
 */
export const lostExitCode = 255

// Only shell builtins on the common path (no mkdir, cut or mv processes), so an exec costs one
// shell. The claim is a file created with noclobber (O_EXCL: atomic) holding the boot (field 22 of
// /proc/1/stat, the start time of the machine's pid 1) and the pid of the shell that runs it.
const script = `o="$HOME/.svc/ops"; d="$o/$1"; shift
[ -d "$o" ] || mkdir -p "$o"
boot() { shift 21; b=$1; }
read -r s < /proc/1/stat; boot $s
set -C
if { echo "$b $$" > "$d.claim"; } 2>/dev/null; then
  set +C
  "$@"; code=$?
  echo $code > "$d.exit"
  exit $code
fi
set +C
tries=0
while [ ! -s "$d.exit" ]; do
  if read -r cb cp < "$d.claim" && [ -n "$cp" ]; then
    [ "$cb" = "$b" ] && kill -0 "$cp" 2>/dev/null || { [ -s "$d.exit" ] && break; exit ${lostExitCode}; }
  else
    tries=$((tries + 1)); [ $tries -gt 40 ] && exit ${lostExitCode}
  fi
  sleep 0.05
done
read -r code < "$d.exit"; exit "$code"`

/** `argv`, run once for `once` when given (an ExecRequest's field), by the wrapper. */
export const wrapOnce = (argv: ReadonlyArray<string>, once: string | undefined) =>
  once === undefined ? argv : onceArgv(once, argv)

/** The argv that runs `argv` once for `operationId`. */
export const onceArgv = (operationId: string, argv: ReadonlyArray<string>): ReadonlyArray<string> => [
  "/bin/sh",
  "-c",
  script,
  "svc-once",
  operationId,
  ...argv
]
