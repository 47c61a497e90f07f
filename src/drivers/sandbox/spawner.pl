# The svc spawner: one small long-lived host process per svc that starts the machines' sandboxes,
# so a boot costs a fork of this process (a few MB) instead of a fork of svc with its whole heap.
# Loaded by SpawnerScript.ts after namespaces.pl (newNetns, isolate, pipeOn and the isolation
# probe are there), run with perl -e.
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
