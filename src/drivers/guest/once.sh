# Runs "$@" at most once for the operation $1, even across a crash of svc: the claim protocol
# (docs/drivers.md "Exactly once: the claim protocol"); launcher/launcher.pl `claim` keeps the same
# files on its common path. Exit 255: the run was lost (its claim's shell is gone, no exit written).
# Only shell builtins on the common path (no mkdir, cut or mv processes), so an exec costs one
# shell. The claim is a file created with noclobber (O_EXCL: atomic) holding the boot (field 22 of
# /proc/1/stat, the start time of the machine's pid 1) and the pid of the shell that runs it.
o="$HOME/.svc/ops"; d="$o/$1"; shift
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
    [ "$cb" = "$b" ] && kill -0 "$cp" 2>/dev/null || { [ -s "$d.exit" ] && break; exit 255; }
  else
    tries=$((tries + 1)); [ $tries -gt 40 ] && exit 255
  fi
  sleep 0.05
done
read -r code < "$d.exit"; exit "$code"
