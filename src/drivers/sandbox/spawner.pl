# The svc spawner: one small long-lived host process per svc that starts the machines' sandboxes,
# so a boot costs a fork of this process (a few MB) instead of a fork of svc with its whole heap.
# Loaded by SpawnerScript.ts, run with perl -e.
#
# Requests on stdin: `length (u32 BE) | payload`, the payload's fields joined by NUL:
#   tag, log file, netns (1: the child first moves into a new network namespace with lo up, as
#   net.sh's boot does), [with netns 1: net argc, net argv... (a network job for that namespace,
#   may be none)], group count, cgroup.procs files..., argc, argv..., env name, value, ...
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

sub forget {
  my ($boot) = @_;
  close $boot->{info} if $boot->{info};
  close $boot->{ready} if $boot->{ready};
  close $boot->{net} if $boot->{net};
  $boot->{info} = $boot->{ready} = $boot->{net} = undef;
  delete $boots{ $boot->{tag} };
}

sub fail {
  my ($boot, $why) = @_;
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
  my $argc = shift @fields;
  my @argv = splice(@fields, 0, $argc);
  my %env = @fields;
  my ($infoRead, $infoWrite, $readyRead, $readyWrite, $netRead, $netWrite);
  unless (pipe($infoRead, $infoWrite) && pipe($readyRead, $readyWrite) && (!@netArgv || pipe($netRead, $netWrite))) {
    return answer('F', $tag, "pipe: $!");
  }
  my $pid = fork;
  unless (defined $pid) { return answer('F', $tag, "fork: $!") }
  if ($pid == 0) {
    $SIG{PIPE} = $SIG{CHLD} = 'DEFAULT';
    POSIX::setsid();
    # Out of the way of 0-4 first, then onto 3 and 4 (dup2 leaves the copies inheritable).
    my $info = fcntl($infoWrite, Fcntl::F_DUPFD(), 10);
    my $ready = fcntl($readyWrite, Fcntl::F_DUPFD(), 10);
    my $logFd = POSIX::open($log, POSIX::O_WRONLY() | POSIX::O_CREAT() | POSIX::O_TRUNC(), oct('600'));
    my $null = POSIX::open('/dev/null', POSIX::O_RDONLY());
    POSIX::_exit(126) unless defined $info && defined $ready && defined $logFd && defined $null;
    POSIX::dup2($null, 0);
    POSIX::dup2($logFd, 1);
    POSIX::dup2($logFd, 2);
    POSIX::dup2($info, 3);
    POSIX::dup2($ready, 4);
    POSIX::close($_) for ($null, $logFd, $info, $ready);
    if ($netns) {
      unless (newNetns()) {
        print STDERR "svc-spawner: cannot make the machine's network namespace: $!\n";
        POSIX::_exit(126);
      }
      networkJob($netWrite, @netArgv) if @netArgv;
    }
    %ENV = %env;
    exec { $argv[0] } @argv or print STDERR "svc-spawner: cannot run $argv[0]: $!\n";
    POSIX::_exit(127);
  }
  close $infoWrite;
  close $readyWrite;
  close $netWrite if $netWrite;
  nonblocking($_) for grep { $_ } ($infoRead, $readyRead, $netRead);
  my $boot = {
    tag => $tag, pid => $pid, procs => \@procs, info => $infoRead, ready => $readyRead, net => $netRead, text => ''
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
  }
  flush() if vec($ww, 1, 1);
}
