# Runs the agent "$@" when one of the variables named in $1 (space separated) holds a provider key;
# else says so on stderr and exits 97 (agents/providers/TurnRunner.ts reads both as "no key").
keys=$1; shift
for name in $keys; do
  eval "value=\${$name:-}"
  if [ -n "$value" ]; then exec "$@"; fi
done
echo "svc: no provider key" >&2
exit 97
