# svc's machine network (docs/drivers.md "Network"), run by /bin/sh -c with $0 = svc-net.
# Loaded by Network.ts; no file of svc's source tree is read at run time.
#
#   boot MACHINE_DIR HOST_NETNS INTERNET HOST_LOOPBACK RESOLV -- ARGV...
#       Run by `unshare --net`: in the machine's new network namespace, made outside its user
#       namespace so that nothing in the machine can change its interfaces or rules. Brings `lo`
#       up, lets the machine's root bind low ports and ping, attaches the internet path when
#       INTERNET is 1, then becomes ARGV (bwrap).
#   attach MACHINE_DIR NETNS HOST_NETNS HOST_LOOPBACK RESOLV
#       Loads MACHINE_DIR/net.nft into NETNS (one transaction: the table is replaced whole), then
#       starts slirp4netns on NETNS unless the one of MACHINE_DIR/slirp.pid runs there already, and
#       returns once its interface is up (its --ready-fd).
# svc itself ends a machine's slirp4netns (Network.killSlirp): its tap interface goes with it.
# HOST_NETNS is a network namespace of svc's own (/proc/<pid>/ns/net): slirp4netns must make its
# sockets there, not in the machine's. HOST_LOOPBACK 1 lets slirp4netns take 10.0.2.2 to the
# host's loopback (the rules then allow only the configured ports there), 0 disables that.
# RESOLV, when not empty, is the resolv.conf slirp4netns reads instead of the host's /etc/resolv.conf
# (the machine's DNS at 10.0.2.3 goes to its first nameserver).
set -eu

# The start time of slirp4netns process $1 while it lives (field 22 of its stat; its name has no
# blanks), nothing once it is dead (a zombie too: its parent may reap it late).
started() {
  { read -r stat < "/proc/$1/stat"; } 2>/dev/null || return 0
  # shellcheck disable=SC2086
  set -- $stat
  [ "$2" = "(slirp4netns)" ] && [ "$3" != Z ] && shift 21 && echo "$1"
  return 0
}

# The pid of MACHINE_DIR's slirp4netns while it runs (slirp.pid holds its pid and start time).
slirp_of() {
  { read -r pid start < "$1/slirp.pid"; } 2>/dev/null || return 0
  case "$pid" in '' | *[!0-9]*) return 0 ;; esac
  [ -n "$start" ] && [ "$(started "$pid")" = "$start" ] && echo "$pid"
  return 0
}

attach() {
  dir=$1 ns=$2 host=$3 options=--disable-host-loopback resolv=$5
  [ "$4" = 1 ] && options=
  # shellcheck disable=SC2016
  [ -n "$resolv" ] && set -- unshare --mount -- /bin/sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$resolv"
  [ -z "$resolv" ] && set --
  nsenter --net="$ns" nft -f "$dir/net.nft"
  [ -n "$(slirp_of "$dir")" ] && return 0
  ready="$dir/slirp.ready"
  rm -f "$ready"
  mkfifo -m 600 "$ready"
  # None of our descriptors (fds 3 and 4 are bwrap's pipes at boot): it outlives svc and the boot;
  # svc ends it at detach or stop. --enable-sandbox drops its capabilities. Started from a subshell
  # that exits at once, so it is not a child of what this shell becomes (bwrap, which would leave it
  # a zombie once killed). nsenter (and unshare, sh) exec it: the pid written is slirp4netns's.
  # shellcheck disable=SC2086
  (
    nsenter --net="$host" "$@" slirp4netns --configure --mtu=65520 $options --enable-sandbox \
      --enable-seccomp --netns-type=path --ready-fd=5 "$ns" tap0 \
      < /dev/null >> "$dir/slirp.log" 2>&1 3>&- 4>&- 5> "$ready" &
    echo $! > "$dir/slirp.started"
  )
  read -r pid < "$dir/slirp.started"
  exec 6< "$ready"
  rm -f "$ready"
  # The ready byte, or the end of the pipe when slirp4netns failed before it.
  byte=$(dd bs=1 count=1 <&6 2>/dev/null || true)
  exec 6<&-
  if [ "$byte" != 1 ]; then
    kill -KILL "$pid" 2>/dev/null || true
    echo "svc-net: slirp4netns did not start: $(tail -n 3 "$dir/slirp.log" 2>/dev/null | tr '\n' ' ')" >&2
    exit 1
  fi
  echo "$pid $(started "$pid")" > "$dir/slirp.pid.tmp"
  mv "$dir/slirp.pid.tmp" "$dir/slirp.pid"
}

command=$1
shift
case "$command" in
  boot)
    dir=$1 host=$2 internet=$3 loopback=$4 resolv=$5
    shift 6
    # The machine's own environment goes on to bwrap as it came.
    machine_path=${PATH-}
    PATH=/usr/sbin:/usr/bin:/sbin:/bin
    ip link set lo up
    # Its root is not root of this namespace's owner: low ports and ping are opened to all of it.
    echo 0 > /proc/sys/net/ipv4/ip_unprivileged_port_start
    echo '0 2147483647' > /proc/sys/net/ipv4/ping_group_range
    [ "$internet" = 1 ] && attach "$dir" "/proc/$$/ns/net" "$host" "$loopback" "$resolv"
    PATH=$machine_path
    exec "$@"
    ;;
  attach) attach "$@" ;;
  *) echo "svc-net: unknown command $command" >&2; exit 2 ;;
esac
