/**
 * Running a command in a machine at most once per operation, even across a crash of svc.
 *
 * The command is wrapped in a small shell script that first creates a marker directory named by
 * the operation id in the machine's own disk (`~/.svc/ops/<operation id>`; `mkdir` is atomic) and
 * writes the exit code there when the command ends. When an `uncertain` operation is re-applied,
 * the same wrapper finds the marker and, instead of running the command again, waits for the first
 * run's exit code (or reports it lost when that run was killed with its machine). The output of
 * the first run was persisted as it came, so the operation's result is whole either way.
 */
export const lostExitCode = 255

const script = `d="$HOME/.svc/ops/$1"; shift
if mkdir -p "$HOME/.svc/ops" && mkdir "$d" 2>/dev/null; then
  cut -d' ' -f22 /proc/1/stat > "$d/boot" 2>/dev/null; echo $$ > "$d/pid"
  "$@"; code=$?
  echo $code > "$d/exit.tmp" && mv "$d/exit.tmp" "$d/exit"
  exit $code
fi
while [ ! -f "$d/exit" ]; do
  [ "$(cut -d' ' -f22 /proc/1/stat 2>/dev/null)" = "$(cat "$d/boot" 2>/dev/null)" ] && kill -0 "$(cat "$d/pid" 2>/dev/null)" 2>/dev/null || exit ${lostExitCode}
  sleep 0.05
done
exit "$(cat "$d/exit")"`

/** The argv that runs `argv` once for `operationId`. */
export const onceArgv = (operationId: string, argv: ReadonlyArray<string>): ReadonlyArray<string> => [
  "/bin/sh",
  "-c",
  script,
  "svc-once",
  operationId,
  ...argv
]
