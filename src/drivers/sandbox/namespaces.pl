# The namespace and mount steps of the svc spawner (spawner.pl): a machine's network namespace,
# its user namespace with its own range of host ids, the mount namespace with the host's system
# folders locked read-only and the disk idmapped (docs/drivers.md "Isolation"), and the probe that
# tells whether a host allows all this. SpawnerScript.ts puts this file before spawner.pl into
# one `perl -e` program.
# Perl with core modules only (POSIX, Socket: perl-base on Debian).
use strict;
use warnings;
use POSIX ();
use Socket ();
use Config;

# unshare(2) by number: perl-base has no syscall.ph. svc asks for a namespace only on these.
my %unshareCall = (x86_64 => 272, aarch64 => 97);
my ($arch) = $Config{archname} =~ /^([^-]+)/;
# The calls isolate makes, by number on the two architectures svc knows.
my %calls = (
  x86_64 => {
    mount => 165, setns => 308, setgroups => 116, setresuid => 117, setresgid => 119,
    open_tree => 428, move_mount => 429, mount_setattr => 442
  },
  aarch64 => {
    mount => 40, setns => 268, setgroups => 159, setresuid => 147, setresgid => 149,
    open_tree => 428, move_mount => 429, mount_setattr => 442
  }
);

# In the forked child: a new network namespace, owned by the spawner's user namespace (the host's),
# with lo up, low ports and ping open to every user of it (the machine's root is not its owner).
sub newNetns {
  my $call = $unshareCall{$arch // ''} or return;
  syscall($call, 0x40000000) == 0 or return;
  socket(my $sock, Socket::PF_INET(), Socket::SOCK_DGRAM(), 0) or return;
  my $ifr = pack('a16 x24', 'lo');
  ioctl($sock, 0x8913, $ifr) or return;
  my $flags = unpack('x16 s', $ifr);
  my $up = pack('a16 s x22', 'lo', $flags | 1);
  ioctl($sock, 0x8914, $up) or return;
  close $sock;
  for (['ip_unprivileged_port_start', '0'], ['ping_group_range', '0 2147483647']) {
    open(my $fh, '>', "/proc/sys/net/ipv4/$_->[0]") or return;
    print {$fh} $_->[1];
    close $fh or return;
  }
  return 1;
}

# In the forked child: bytes on a pipe read from fd `$fd` (at most a pipe's buffer: bwrap's
# arguments, a seccomp program, a small file). Answers false when it could not.
sub pipeOn {
  my ($fd, $bytes) = @_;
  # Raw descriptors: a Perl handle would close its number when it goes, the dup2 target among them.
  my ($read, $write) = POSIX::pipe() or return;
  my $put = POSIX::write($write, $bytes, length $bytes);
  POSIX::close($write);
  return unless defined $put && $put == length $bytes;
  return 1 if $read == $fd;
  POSIX::dup2($read, $fd) // return;
  POSIX::close($read);
  return 1;
}

sub call {
  my ($name, @args) = @_;
  my $number = $calls{$arch // ''}{$name} or return -1;
  return syscall($number, @args);
}

# MS_ flags of mount(2)
my ($rdonly, $nosuid, $nodev, $noexec, $remount, $bind, $rec, $private) =
  (1, 2, 4, 8, 32, 4096, 16384, 1 << 18);

# Every mount point at or under `$path`, from mountinfo (fields 5 and 6: where, its options).
sub mountsUnder {
  my ($path) = @_;
  open(my $fh, '<', '/proc/self/mountinfo') or return;
  my @found;
  while (my $line = <$fh>) {
    my @f = split ' ', $line;
    (my $where = $f[4]) =~ s/\\([0-7]{3})/chr(oct($1))/ge;
    push @found, [$where, $f[5]] if $where eq $path || index($where, "$path/") == 0;
  }
  close $fh;
  return @found;
}

# A bind of `$source` at `$target` (recursive for folders), every mount of it read-only, nosuid
# and nodev. Made here, in a mount namespace of the host's user namespace, and copied into the
# machine's less privileged one by bwrap, these flags are locked: nothing in the machine can
# remount them writable, nor unmount a mask to see what it hides.
sub readOnlyBind {
  my ($source, $target) = @_;
  call('mount', $source, $target, 0, $bind | $rec, 0) == 0 or return "bind $target: $!";
  for my $mount (mountsUnder($target)) {
    my $flags = $remount | $bind | $rdonly | $nosuid | $nodev | ($mount->[1] =~ /(?:^|,)noexec(?:,|$)/ ? $noexec : 0);
    call('mount', 0, $mount->[0], 0, $flags, 0) == 0 or return "read-only $mount->[0]: $!";
  }
  return;
}

# A user namespace whose 0-65535 are host ids `$base` onwards (uid_map and gid_map written from
# here, the host's side), held by a short-lived child: answers its descriptor, or why not.
sub newUserns {
  my ($base) = @_;
  pipe(my $toldRead, my $toldWrite) or return (undef, "pipe: $!");
  pipe(my $holdRead, my $holdWrite) or return (undef, "pipe: $!");
  my $pid = fork // return (undef, "fork: $!");
  if ($pid == 0) {
    close $toldRead;
    close $holdWrite;
    POSIX::_exit(1) unless syscall($unshareCall{$arch}, 0x10000000) == 0;
    syswrite($toldWrite, 'u');
    sysread($holdRead, my $end, 1);
    POSIX::_exit(0);
  }
  close $toldWrite;
  close $holdRead;
  my ($ns, $why);
  if ((sysread($toldRead, my $byte, 1) // 0) != 1) {
    $why = "no user namespace: the kernel refused (user.max_user_namespaces?)";
  } else {
    for my $map ('uid_map', 'gid_map') {
      my $ok = open(my $fh, '>', "/proc/$pid/$map");
      $ok &&= syswrite($fh, "0 $base 65536\n");
      $why //= "$map: $!" unless $ok;
    }
    $why //= "its descriptor: $!" unless open($ns, '<', "/proc/$pid/ns/user");
  }
  close $holdWrite;
  waitpid($pid, 0);
  return ($ns, $why);
}

# A detached copy of the mount tree at `$source` with `$attr` (MOUNT_ATTR_*, and a user namespace
# to idmap by), attached at `$target`. Answers why not.
sub attachCopy {
  my ($source, $target, $set, $ns) = @_;
  my $tree = call('open_tree', -100, $source, 1 | 0x80000 | 0x8000);
  return "open_tree $source: $!" if $tree < 0;
  my $attr = pack('Q4', $set, 0, 0, $ns ? fileno($ns) : 0);
  my $empty = '';
  my $why;
  if (call('mount_setattr', $tree, $empty, 0x1000 | 0x8000, $attr, length $attr) != 0) {
    $why = "mount_setattr $source: $!";
  } elsif (call('move_mount', $tree, $empty, -100, $target, 4) != 0) {
    $why = "move_mount $source: $!";
  }
  POSIX::close($tree);
  return $why;
}

# The stage: a small tmpfs that bwrap, as the machine's root, can walk (the data dir is the host
# root's alone), holding the machine's disk idmapped to its user namespace (what the disk holds as
# uid 0 is the machine's root, host uid `base`, without a chown) and the agents' tools read-only.
sub stage {
  my ($ns, %iso) = @_;
  my $stage = $iso{stage};
  mkdir $stage, oct('755') unless -d $stage;
  call('mount', 'tmpfs', $stage, 'tmpfs', $nosuid | $nodev, 'mode=0755,size=64k') == 0 or return "stage: $!";
  mkdir "$stage/disk" or return "stage: $!";
  my $why = attachCopy($iso{disk}, "$stage/disk", 0x100000 | 0x2 | 0x4, $ns);
  return $why if defined $why || !length $iso{tools} || !-d $iso{tools};
  mkdir "$stage/tools" or return "stage: $!";
  return attachCopy($iso{tools}, "$stage/tools", 0x1 | 0x2 | 0x4);
}

# In the forked child, before bwrap: the machine's user namespace (its own 65,536 host ids), a
# mount namespace of the host's with the system folders read-only and the disk idmapped, then
# into the user namespace as its root. bwrap, started there, makes the machine's mount namespace
# (a copy with every mount above locked), pid, ipc, uts and cgroup namespaces. Answers why not.
sub isolate {
  my (%iso) = @_;
  return "unknown architecture $arch" unless $calls{$arch // ''};
  my ($ns, $why) = newUserns($iso{base});
  return $why if defined $why;
  syscall($unshareCall{$arch}, 0x20000) == 0 or return "mount namespace: $!";
  call('mount', 0, '/', 0, $rec | $private, 0) == 0 or return "private /: $!";
  for my $path (@{ $iso{readOnly} }) {
    next unless -e $path;
    $why = readOnlyBind($path, $path);
    return $why if defined $why;
  }
  for my $path (@{ $iso{masked} }) {
    $why = readOnlyBind('/dev/null', $path);
    return $why if defined $why;
  }
  $why = stage($ns, %iso);
  return $why if defined $why;
  my $fd = 7;
  for my $data (@{ $iso{data} }) {
    pipeOn($fd++, $data) or return "data pipe: $!";
  }
  call('setns', fileno($ns), 0x10000000) == 0 or return "setns: $!";
  close $ns;
  call('setgroups', 0, 0) == 0 or return "setgroups: $!";
  call('setresgid', 0, 0, 0) == 0 or return "setresgid: $!";
  call('setresuid', 0, 0, 0) == 0 or return "setresuid: $!";
  return;
}

# `perl -e <this> probe <base> <folder>` (IsolationCheck.ts): whether this host lets svc isolate a
# machine (a user namespace with a range mapped, a mount namespace, an idmapped mount of a folder
# on the data dir's file system), as one line, "ok" or why not; nothing of it outlives the probe.
if (@ARGV == 3 && $ARGV[0] eq 'probe') {
  my (undef, $base, $folder) = @ARGV;
  my $why = $calls{$arch // ''} ? undef : "unknown architecture $arch";
  my $ns;
  ($ns, $why) = newUserns($base) unless defined $why;
  $why //= "mount namespace: $!" unless syscall($unshareCall{$arch}, 0x20000) == 0;
  $why //= "private /: $!" unless call('mount', 0, '/', 0, $rec | $private, 0) == 0;
  $why //= attachCopy($folder, $folder, 0x100000, $ns);
  print defined $why ? "$why\n" : "ok\n";
  exit(defined $why ? 1 : 0);
}
