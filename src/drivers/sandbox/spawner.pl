# The svc spawner: one small long-lived host process per svc that starts the machines' sandboxes,
# so a boot costs a fork of this process (a few MB) instead of a fork of svc with its whole heap.
# Loaded by SpawnerScript.ts, run with perl -e.
#
# Requests on stdin: `length (u32 BE) | payload`, the payload's fields joined by NUL:
#   tag, log file, netns (1: the child first moves into a new network namespace with lo up, as
#   net.sh's boot does), [with netns 1: net argc, net argv... (a network job for that namespace,
#   may be none)], group count, cgroup.procs files..., isolation (empty, or the first host uid of
#   the machine's range: see isolate below), [with isolation: disk folder, stage folder, tools
#   folder (may be empty), read-only count, paths...,
#   masked count, paths..., data count, data in hex... (on fds 7, 8, ...)], argc, argv..., env
#   name, value, ...
# The network job (net.sh setup: rules, slirp4netns) runs beside bwrap, in the new namespace, and
# writes a byte on its fd 6 once done; R waits for it too.
# Answers on stdout, one line each:
#   S <tag> <pid>   forked: the pid of bwrap itself
#   R <tag> <pid>   ready: bwrap's pid 1 (from --info-fd 3) has set the machine's root up and its
#                   first process runs (it wrote a byte on fd 4); right after this answer pid 1
#                   and that process join the groups
#   F <tag> <why>   failed before ready
# Each sandbox starts in a session of its own with stdout and stderr in its log file and only
# the request's environment. On the end of stdin (svc exited) every sandbox that is not ready yet
# is killed (no svc knows of it), and the spawner exits: ready ones run on, to be adopted.
# With isolation (docs/drivers.md "Isolation"), the child joins the groups before it makes any
# namespace (the machine's cgroup namespace is rooted at its own group), and bwrap gets its
# arguments on fd 5 (`--args 5`: pid 1's command line shows no host path to the machine).
# Perl with core modules only (POSIX, Fcntl: perl-base on Debian).
use strict;
use warnings;
$0 = 'svc-spawner';
use POSIX ();
use Fcntl ();
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

$SIG{PIPE} = 'IGNORE';
pipe(my $wakeRead, my $wakeWrite) or die "svc-spawner: pipe: $!\n";
nonblocking($_) for ($wakeRead, $wakeWrite);
$SIG{CHLD} = sub { syswrite($wakeWrite, 'c') };

my ($in, $out, $inEnd) = ('', '', 0);
my (%boots, %bypid);

sub nonblocking {
  my ($fh) = @_;
  my $flags = fcntl($fh, Fcntl::F_GETFL(), 0);
  fcntl($fh, Fcntl::F_SETFL(), $flags | Fcntl::O_NONBLOCK());
}

sub answer { $out .= join(' ', @_) . "\n" }

sub joinGroups {
  my ($boot, $pid) = @_;
  for my $procs (@{ $boot->{procs} }) {
    if (open(my $fh, '>>', $procs)) { print $fh $pid; close $fh }
  }
}

# The boot's output so far into its log file, at most `$logCap` bytes of it; true at its end.
my $logCap = 65536;
sub readOut {
  my ($boot) = @_;
  while (1) {
    my $got = sysread($boot->{out}, my $chunk, 65536);
    return if !defined $got && $!{EAGAIN};
    if (!$got) {
      close $boot->{out};
      $boot->{out} = undef;
      return 1;
    }
    my $room = $logCap - $boot->{logged};
    next if $room <= 0;
    $chunk = substr($chunk, 0, $room);
    syswrite($boot->{log}, $chunk);
    $boot->{logged} += length $chunk;
  }
}

sub forget {
  my ($boot) = @_;
  # What is already written is the boot's last word (a failure's reason).
  readOut($boot) if $boot->{out};
  for my $key (qw(info ready net out log)) {
    close $boot->{$key} if $boot->{$key};
    $boot->{$key} = undef;
  }
  delete $boots{ $boot->{tag} };
}

sub fail {
  my ($boot, $why) = @_;
  readOut($boot) if $boot->{out};
  answer('F', $boot->{tag}, $why);
  kill 'KILL', $boot->{child} if $boot->{child};
  # The child's process group: bwrap, and the network job with the slirp4netns it started.
  kill 'KILL', -$boot->{pid};
  forget($boot);
}

sub flush {
  return unless length $out;
  my $put = syswrite(STDOUT, $out);
  substr($out, 0, $put) = '' if $put;
}

sub settle {
  my ($boot) = @_;
  return unless $boot->{child} && $boot->{up} && !$boot->{net};
  my $pid = $boot->{child};
  # svc hears first: a process's first move into a cgroup waits for an RCU grace period of the
  # kernel (docs/drivers.md "Cgroups at boot"). Nothing else runs in the
  # machine meanwhile; its first exec's launcher joins the groups itself before it forks anything.
  answer('R', $boot->{tag}, $pid);
  flush();
  my @children;
  if (open(my $fh, '<', "/proc/$pid/task/$pid/children")) { @children = split ' ', scalar(<$fh>) // ''; close $fh }
  joinGroups($boot, $_) for $pid, @children;
  forget($boot);
}

sub start {
  my ($payload) = @_;
  my @fields = split /\0/, $payload, -1;
  my ($tag, $log, $netns) = splice(@fields, 0, 3);
  my @netArgv;
  @netArgv = splice(@fields, 0, shift @fields) if $netns;
  my $groups = shift @fields;
  my @procs = splice(@fields, 0, $groups);
  my %iso;
  if (length(my $base = shift @fields)) {
    my ($disk, $stage, $tools) = splice(@fields, 0, 3);
    my @readOnly = splice(@fields, 0, shift @fields);
    my @masked = splice(@fields, 0, shift @fields);
    my @data = map { pack('H*', $_) } splice(@fields, 0, shift @fields);
    %iso = (base => $base, disk => $disk, stage => $stage, tools => $tools, readOnly => \@readOnly, masked => \@masked, data => \@data);
  }
  my $argc = shift @fields;
  my @argv = splice(@fields, 0, $argc);
  my %env = @fields;
  my ($infoRead, $infoWrite, $readyRead, $readyWrite, $netRead, $netWrite, $outRead, $outWrite);
  unless (pipe($infoRead, $infoWrite) && pipe($readyRead, $readyWrite) && pipe($outRead, $outWrite)
    && (!@netArgv || pipe($netRead, $netWrite))) {
    return answer('F', $tag, "pipe: $!");
  }
  sysopen(my $logFile, $log, Fcntl::O_WRONLY() | Fcntl::O_CREAT() | Fcntl::O_TRUNC() | Fcntl::O_APPEND(), oct('600'))
    or return answer('F', $tag, "log: $!");
  my $pid = fork;
  unless (defined $pid) { return answer('F', $tag, "fork: $!") }
  if ($pid == 0) {
    $SIG{PIPE} = $SIG{CHLD} = 'DEFAULT';
    POSIX::setsid();
    close $outRead;
    # Out of the way of 0-4 first, then onto 3 and 4 (dup2 leaves the copies inheritable).
    my $info = fcntl($infoWrite, Fcntl::F_DUPFD(), 10);
    my $ready = fcntl($readyWrite, Fcntl::F_DUPFD(), 10);
    my $output = fcntl($outWrite, Fcntl::F_DUPFD(), 10);
    my $null = POSIX::open('/dev/null', POSIX::O_RDONLY());
    POSIX::_exit(126) unless defined $info && defined $ready && defined $output && defined $null;
    POSIX::dup2($null, 0);
    POSIX::dup2(fileno($logFile), 1);
    POSIX::dup2(fileno($logFile), 2);
    POSIX::dup2($info, 3);
    POSIX::dup2($ready, 4);
    POSIX::close($_) for ($null, $info, $ready);
    if ($netns) {
      unless (newNetns()) {
        print STDERR "svc-spawner: cannot make the machine's network namespace: $!\n";
        POSIX::_exit(126);
      }
      # The network job runs outside the machine: it writes to the log file itself.
      networkJob($netWrite, @netArgv) if @netArgv;
    }
    # What runs in the machine holds no host file: its output reaches the log through the
    # spawner, which stops reading at ready (docs/drivers.md "Isolation").
    POSIX::dup2($output, 1);
    POSIX::dup2($output, 2);
    POSIX::close($output);
    close $logFile;
    if (%iso) {
      # The groups first: the cgroup namespace bwrap makes is rooted where its maker is.
      joinGroups({ procs => \@procs }, $$);
      my $why = isolate(%iso);
      if (defined $why) {
        print STDERR "svc-spawner: cannot isolate the machine: $why\n";
        POSIX::_exit(126);
      }
      # bwrap takes its options from the descriptor, and the command after `--` from argv.
      my ($end) = grep { $argv[$_] eq '--' } 1 .. $#argv;
      my @options = @argv[1 .. ($end // @argv) - 1];
      @argv = ($argv[0], '--args', '5', @argv[($end // @argv) .. $#argv]) if pipeOn(5, join('', map { "$_\0" } @options));
    }
    %ENV = %env;
    exec { $argv[0] } @argv or print STDERR "svc-spawner: cannot run $argv[0]: $!\n";
    POSIX::_exit(127);
  }
  close $infoWrite;
  close $readyWrite;
  close $outWrite;
  close $netWrite if $netWrite;
  nonblocking($_) for grep { $_ } ($infoRead, $readyRead, $netRead, $outRead);
  my $boot = {
    tag => $tag, pid => $pid, procs => (%iso ? [] : \@procs), info => $infoRead, ready => $readyRead, net => $netRead,
    out => $outRead, log => $logFile, logged => 0, text => ''
  };
  $boots{$tag} = $boot;
  $bypid{$pid} = $boot;
  answer('S', $tag, $pid);
}

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

# In the forked child, in the new namespace: the network job, started twice forked so that it is
# nobody's child once bwrap runs (init reaps it), with the write end of its pipe as fd 6.
sub networkJob {
  my ($netWrite, @argv) = @_;
  my $first = fork;
  POSIX::_exit(126) unless defined $first;
  if ($first == 0) {
    my $second = fork;
    POSIX::_exit(0) if !defined $second || $second;
    POSIX::close($_) for 3, 4;
    POSIX::dup2(fileno($netWrite), 6);
    %ENV = (PATH => '/usr/sbin:/usr/bin:/sbin:/bin');
    exec { $argv[0] } @argv or print STDERR "svc-spawner: cannot run $argv[0]: $!\n";
    POSIX::_exit(127);
  }
  waitpid($first, 0);
  close $netWrite;
  return;
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

sub reap {
  while ((my $pid = waitpid(-1, POSIX::WNOHANG())) > 0) {
    my $boot = delete $bypid{$pid};
    next unless $boot && $boots{ $boot->{tag} };
    my $status = $? & 127 ? 'signal ' . ($? & 127) : 'exit ' . ($? >> 8);
    fail($boot, "bwrap ended ($status)");
  }
}

sub readInfo {
  my ($boot) = @_;
  my $got = sysread($boot->{info}, my $chunk, 4096);
  return if !defined $got && $!{EAGAIN};
  if ($got) {
    $boot->{text} .= $chunk;
    return unless $boot->{text} =~ /\}/;
  }
  close $boot->{info};
  $boot->{info} = undef;
  my ($child) = $boot->{text} =~ /"child-pid"\s*:\s*(\d+)/;
  # Closed without a pid: bwrap failed, and its exit status is the answer (reap).
  return unless $child;
  $boot->{child} = $child;
  settle($boot);
}

sub readReady {
  my ($boot) = @_;
  my $got = sysread($boot->{ready}, my $byte, 1);
  return if !defined $got && $!{EAGAIN};
  close $boot->{ready};
  $boot->{ready} = undef;
  # No byte: the first process never ran, and bwrap ends; its exit status is the answer (reap).
  return unless $got;
  $boot->{up} = 1;
  settle($boot);
}

sub readNet {
  my ($boot) = @_;
  my $got = sysread($boot->{net}, my $byte, 1);
  return if !defined $got && $!{EAGAIN};
  close $boot->{net};
  $boot->{net} = undef;
  # Closed without its byte: the network job failed (its reason is in the log).
  return fail($boot, "the machine's network did not come up") unless $got;
  settle($boot);
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

nonblocking(\*STDIN);
nonblocking(\*STDOUT);
binmode STDIN;
while (1) {
  my ($r, $w) = ('', '');
  vec($r, fileno($wakeRead), 1) = 1;
  vec($r, 0, 1) = 1 unless $inEnd;
  for my $boot (values %boots) {
    vec($r, fileno($boot->{info}), 1) = 1 if $boot->{info};
    vec($r, fileno($boot->{ready}), 1) = 1 if $boot->{ready};
    vec($r, fileno($boot->{net}), 1) = 1 if $boot->{net};
    vec($r, fileno($boot->{out}), 1) = 1 if $boot->{out};
  }
  vec($w, 1, 1) = 1 if length $out;
  last if $inEnd && !length $out && !%boots;
  my $n = select(my $rr = $r, my $ww = $w, undef, undef);
  next if $n < 0;
  if (vec($rr, fileno($wakeRead), 1)) { sysread($wakeRead, my $drop, 64) }
  reap();
  if (!$inEnd && vec($rr, 0, 1)) {
    my $got = sysread(STDIN, $in, 65536, length $in);
    if (defined $got && $got == 0) {
      # svc is gone: nobody will record the sandboxes still coming up.
      $inEnd = 1;
      fail($_, 'svc ended') for values %boots;
      $out = '';
      last;
    }
    while (length($in) >= 4) {
      my $length = unpack('N', $in);
      last if length($in) < 4 + $length;
      start(substr($in, 4, $length));
      substr($in, 0, 4 + $length) = '';
    }
  }
  for my $boot (values %boots) {
    readInfo($boot) if $boot->{info} && vec($rr, fileno($boot->{info}), 1);
    readReady($boot) if $boots{ $boot->{tag} } && $boot->{ready} && vec($rr, fileno($boot->{ready}), 1);
    readNet($boot) if $boots{ $boot->{tag} } && $boot->{net} && vec($rr, fileno($boot->{net}), 1);
    readOut($boot) if $boots{ $boot->{tag} } && $boot->{out} && vec($rr, fileno($boot->{out}), 1);
  }
  flush() if vec($ww, 1, 1);
}
