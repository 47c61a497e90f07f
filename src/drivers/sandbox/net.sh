# svc's machine network (docs/drivers.md "Network"), run by /bin/sh -c with $0 = svc-net.
# Loaded by Network.ts; no file of svc's source tree is read at run time.
#
#   boot MACHINE_DIR HOST_NETNS INTERNET HOST_LOOPBACK RESOLV -- ARGV...
#       Run by `unshare --net`: in the machine's new network namespace, made outside its user
#       namespace so that nothing in the machine can change its interfaces or rules. Brings `lo`
#       up, lets the machine's root bind low ports and ping, attaches the internet path when
#       INTERNET is 1, then becomes ARGV (bwrap).
#   setup MACHINE_DIR HOST_NETNS 1 HOST_LOOPBACK RESOLV
#       The internet path of a namespace the spawner made itself (lo up: spawner.pl), run there
#       beside bwrap; writes a byte on fd 6 once done.
#   attach MACHINE_DIR NETNS HOST_NETNS HOST_LOOPBACK RESOLV 0 EXPECTED
#       Loads MACHINE_DIR/net-replace.nft into NETNS (one transaction: the table is replaced whole;
#       net.nft, the same without the replacing, at boot) and,
#       meanwhile, starts slirp4netns on NETNS unless the one of MACHINE_DIR/slirp.pid runs already;
#       returns once both are done (slirp4netns's --ready-fd: its interface is up). NETNS is
#       opened once and must be EXPECTED (readlink's `net:[inode]`, recorded at boot): a path under
#       /proc/<pid> could name another process's namespace by then, the host's among them.
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

# attach DIR NS HOST LOOPBACK RESOLV FRESH: FRESH 1 in a namespace made just now (no table to
# replace: nft needs no cache then, half its time).
attach() {
  dir=$1 ns=$2 host=$3 options=--disable-host-loopback resolv=$5 fresh=$6 expected=${7-}
  if [ "$fresh" != 1 ]; then
    exec 7< "$ns"
    ns=/proc/$$/fd/7
    seen=$(readlink "$ns")
    if [ "$seen" != "$expected" ] || [ "$seen" = "$(readlink "$host")" ]; then
      echo "svc-net: the machine's network namespace is gone ($seen, not $expected)" >&2
      exit 1
    fi
  fi
  [ "$4" = 1 ] && options=
  # slirp4netns runs in a mount namespace of its own, private: its --enable-sandbox unmounts what it
  # does not need, and through the host's shared mounts that unmounted /run/netns/* on the host.
  set -- unshare --mount --propagation private --
  # shellcheck disable=SC2016
  [ -n "$resolv" ] && set -- "$@" /bin/sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$resolv"
  pid=
  if [ "$fresh" = 1 ]; then
    # This shell's own namespace, where nothing runs yet: the rules load while slirp4netns starts.
    nft -f "$dir/net.nft" &
    rules=$!
  else
    # A running machine: its rules are in place before any path out is.
    nsenter --net="$ns" nft -f "$dir/net-replace.nft" || exit 1
    rules=
  fi
  if [ -z "$(slirp_of "$dir")" ]; then
    # None of our descriptors (fds 3 and 4 are bwrap's pipes at boot): it outlives svc and the
    # boot; svc ends it at detach or stop. --enable-sandbox drops its capabilities. It is started in
    # the background of a command substitution, which ends once it wrote its ready byte and closed
    # that descriptor (or died): so it is no child of what this shell becomes (bwrap would leave it
    # a zombie once killed). nsenter, unshare (and sh) exec it: $! is slirp4netns's pid.
    # shellcheck disable=SC2086
    out=$(
      nsenter --net="$host" "$@" slirp4netns --configure --mtu=65520 $options --enable-sandbox \
        --enable-seccomp --netns-type=path --ready-fd=5 "$ns" tap0 \
        5>&1 < /dev/null >> "$dir/slirp.log" 2>&1 3>&- 4>&- 6>&- &
      echo "$!"
    )
    pid=${out%%[!0-9]*}
    if [ "${out#"$pid"}" != "
1" ]; then
      kill -KILL "$pid" 2>/dev/null || true
      echo "svc-net: slirp4netns did not start: $(tail -n 3 "$dir/slirp.log" 2>/dev/null | tr '\n' ' ')" >&2
      exit 1
    fi
    # Unrecorded, it would outlive the machine (its folder gone: a destroy during the boot).
    if ! echo "$pid $(started "$pid")" > "$dir/slirp.pid"; then
      kill -KILL "$pid" 2>/dev/null || true
      exit 1
    fi
  fi
  if [ -n "$rules" ] && ! wait "$rules"; then
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    echo "svc-net: the machine's nftables rules did not load" >&2
    exit 1
  fi
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
    ip link set lo up &
    lo=$!
    # Its root is not root of this namespace's owner: low ports and ping are opened to all of it.
    echo 0 > /proc/sys/net/ipv4/ip_unprivileged_port_start
    echo '0 2147483647' > /proc/sys/net/ipv4/ping_group_range
    if [ "$internet" = 1 ]; then attach "$dir" "/proc/$$/ns/net" "$host" "$loopback" "$resolv" 1; fi
    wait "$lo" || exit 1
    PATH=$machine_path
    exec "$@"
    ;;
  setup)
    attach "$1" "/proc/$$/ns/net" "$2" "$4" "$5" 1
    printf 1 >&6
    ;;
  attach) attach "$@" ;;
  *) echo "svc-net: unknown command $command" >&2; exit 2 ;;
esac
