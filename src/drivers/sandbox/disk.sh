# svc's machine disks (docs/drivers.md "Disk"), run by /bin/sh -c with $0 = svc-disk.
# Loaded by Disk.ts; no file of svc's source tree is read at run time. Every path is svc's own
# (under the data dir): none is a path a machine chose.
#
#   template PATH MIB
#       An empty ext4 file system of MIB MiB in the sparse file PATH, made once per size (by a
#       temporary name, then a rename): no lost+found (so a snapshot of a new disk is empty).
#   ensure TEMPLATE IMAGE DIR FOLDERS...
#       The machine's disk mounted at DIR: IMAGE (a sparse copy of TEMPLATE when it does not exist;
#       a plain folder DIR with files, from a restore or an svc before disk images, is copied into
#       it first) loop-mounted at DIR unless something is mounted there already, then FOLDERS made
#       in it. Safe to repeat at every step.
#   unmount DIR
#       Unmounts DIR while something is mounted there (lazily when it stays busy: the loop device
#       is freed with its last user).
#   copy FROM TO DIR MARKER
#       A sparse copy of the image FROM, mounted at DIR, to TO (by a temporary name), with the file
#       system frozen meanwhile (fsfreeze) and MARKER present while it is.
#   thaw DIR MARKER
#       Thaws the file system at DIR when MARKER says a copy left it frozen.
set -eu
umask 022

mounted() { mountpoint -q "$1"; }

# Mounts image $1 at $2 with the options every machine disk gets.
attach() {
  mkdir -p "$2"
  mounted "$2" || mount -t ext4 -o loop,nodev,nosuid,noatime,discard "$1" "$2"
}

case "$1" in
  template)
    path=$2 mib=$3
    [ -s "$path" ] && exit 0
    mkdir -p "$(dirname "$path")"
    tmp="$path.$$.tmp"
    rm -f "$tmp"
    truncate -s "${mib}M" "$tmp"
    # -m 0: no blocks reserved for root (the machine's root would get them anyway).
    mkfs.ext4 -q -F -m 0 -L svc-disk -E lazy_journal_init=1,root_owner=0:0 "$tmp"
    debugfs -w -R "rmdir lost+found" "$tmp" >/dev/null 2>&1
    mv -f "$tmp" "$path"
    ;;
  ensure)
    template=$2 image=$3 dir=$4
    shift 4
    if ! mounted "$dir"; then
      if [ ! -s "$image" ]; then
        tmp="$image.$$.tmp"
        mkdir -p "$(dirname "$image")"
        rm -f "$tmp"
        cp --sparse=always "$template" "$tmp"
        chmod 600 "$tmp"
        if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
          # A folder of files (a restore, or a disk from before images): copied into the image.
          # Nothing of the machine runs meanwhile (the driver migrates stopped machines only).
          staging="$image.$$.mnt"
          attach "$tmp" "$staging"
          trap 'umount "$staging" 2>/dev/null; rmdir "$staging" 2>/dev/null; rm -f "$tmp"' EXIT
          cp -a --sparse=always "$dir/." "$staging/"
          sync -f "$staging"
          umount "$staging"
          rmdir "$staging"
          trap - EXIT
        fi
        mv -f "$tmp" "$image"
      fi
      # The image holds everything: a folder left beside it (a migration that ended before this
      # step) goes, so that the mount hides nothing.
      if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
        rm -rf "$dir"
      fi
      attach "$image" "$dir"
    fi
    for folder in "$@"; do mkdir -p "$dir/$folder"; done
    ;;
  unmount)
    dir=$2
    tries=0
    while mounted "$dir"; do
      tries=$((tries + 1))
      if [ "$tries" -gt 20 ]; then umount -l "$dir"; break; fi
      umount "$dir" 2>/dev/null || sleep 0.1
    done
    ;;
  copy)
    # The file system is frozen while its image is read (every write waits; what was written is
    # in the image), and thawed whatever happens: MARKER says so to a later svc if this shell is
    # killed before (Disk.ts thaws at start).
    from=$2 to=$3 dir=$4 marker=$5
    tmp="$to.$$.tmp"
    mkdir -p "$(dirname "$to")"
    rm -f "$tmp"
    frozen=0
    if mounted "$dir"; then
      frozen=1
      : > "$marker"
      trap 'fsfreeze -u "$dir" 2>/dev/null; rm -f "$marker"' EXIT
      trap 'exit 1' INT TERM HUP
      fsfreeze -f "$dir"
    fi
    cp --sparse=always "$from" "$tmp"
    if [ "$frozen" = 1 ]; then
      fsfreeze -u "$dir"
      rm -f "$marker"
    fi
    trap - EXIT INT TERM HUP
    chmod 600 "$tmp"
    sync "$tmp"
    mv -f "$tmp" "$to"
    ;;
  thaw)
    dir=$2 marker=$3
    if [ -e "$marker" ]; then
      fsfreeze -u "$dir" 2>/dev/null || true
      rm -f "$marker"
    fi
    ;;
  *)
    echo "svc-disk: unknown command $1" >&2
    exit 2
    ;;
esac
