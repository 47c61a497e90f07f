/**
 * The svc launcher: one long-lived process inside a running machine that starts exec's commands,
 * so an exec costs a fork inside the machine instead of a host spawn plus nsenter every time.
 * Frames both ways on fd 3: type (1 byte), run id (u32 BE), payload length (u32 BE), payload.
 *   from svc: R run (cwd, stdin mode p|n, argc, argv..., env name, value, ... joined by NUL),
 *             I stdin bytes, C close stdin, K signal the run's process group (payload: the number)
 *   to svc:   O stdout bytes, E stderr bytes, X exit code (128 + n after a death by signal n)
 * Perl (core modules only) because perl-base is essential on Debian: every machine has it.
 */
const source = String.raw`$0 = 'svc-launcher';
use strict;
use warnings;
use POSIX ();
use Fcntl ();

# Leave nsenter (svc's child, outside the machine) behind: the machine's init adopts the launcher.
# So freezing the machine cannot stop nsenter for good (it stops itself when its child stops), and
# the CPU time of what the launcher reaped stays counted inside the machine after it ends.
defined(my $daemon = fork) or die "svc-launcher: cannot fork: $!\n";
POSIX::_exit(0) if $daemon;

$SIG{PIPE} = 'IGNORE';
my $ending = 0;
$SIG{TERM} = sub { $ending = 1 };
$SIG{CHLD} = sub { };
# svc talks to the launcher over fd 3, a socket (a spawned child's stdin is closed by node once
# the child, here nsenter, exits). Commands must not inherit it.
# Any other descriptor it was handed (leaks of svc's parents) is closed, so commands get none.
opendir(my $fdDir, '/proc/self/fd') or die "svc-launcher: no /proc/self/fd: $!\n";
my @inherited = grep { /^\d+$/ && $_ > 3 } readdir $fdDir;
closedir $fdDir;
POSIX::close($_) for @inherited;
open(my $host, '+<&=', 3) or die "svc-launcher: no fd 3: $!\n";
binmode $host;
fcntl($host, Fcntl::F_SETFD(), Fcntl::FD_CLOEXEC());

# After its command exits, a run's output is read until its pipes close or this many clock ticks
# (10 ms each) passed: a background process may hold them open for good.
my $drainTicks = 3;
# Output waiting for svc past this size stops the reading of commands (back pressure).
my $outLimit = 1 << 20;

my ($in, $out, $hostEnd) = ('', '', 0);
my (%runs, %bypid, %readers);

sub ticks { return (POSIX::times())[0] }

sub nonblocking {
  my ($fh) = @_;
  my $flags = fcntl($fh, Fcntl::F_GETFL(), 0);
  fcntl($fh, Fcntl::F_SETFL(), $flags | Fcntl::O_NONBLOCK());
}

sub frame {
  my ($type, $id, $payload) = @_;
  $out .= pack('a N N', $type, $id, length $payload) . $payload unless $hostEnd;
}

sub refuse {
  my ($id, $message) = @_;
  frame('E', $id, "svc: $message\n");
  frame('X', $id, '126');
}

sub start {
  my ($id, $payload) = @_;
  my ($cwd, $mode, $argc, @rest) = split /\0/, $payload, -1;
  my @argv = splice @rest, 0, $argc;
  my %env = @rest;
  my ($or, $ow, $er, $ew, $ir, $iw);
  pipe($or, $ow) && pipe($er, $ew) && ($mode ne 'p' || pipe($ir, $iw)) or return refuse($id, "cannot make pipes: $!");
  my $pid = fork;
  return refuse($id, "cannot fork: $!") unless defined $pid;
  if ($pid == 0) {
    $SIG{$_} = 'DEFAULT' for qw(PIPE TERM CHLD);
    POSIX::setsid();
    if (defined $ir) { POSIX::dup2(fileno $ir, 0) } else { open(STDIN, '<', '/dev/null') }
    POSIX::dup2(fileno $ow, 1);
    POSIX::dup2(fileno $ew, 2);
    # Every other descriptor Perl opened closes at exec (close-on-exec above fd 2).
    %ENV = %env;
    if (!chdir $cwd) {
      syswrite(STDERR, "svc: cannot change directory to $cwd: $!\n");
      POSIX::_exit(1);
    }
    { no warnings 'exec'; exec { $argv[0] } @argv; }
    my $code = $!{ENOENT} ? 127 : 126;
    syswrite(STDERR, "svc: $argv[0]: $!\n");
    POSIX::_exit($code);
  }
  close $ow;
  close $ew;
  close $ir if defined $ir;
  for ([$or, 'O'], [$er, 'E']) {
    nonblocking($_->[0]);
    $readers{fileno $_->[0]} = [$id, $_->[1], $_->[0]];
  }
  nonblocking($iw) if defined $iw;
  $runs{$id} = { pid => $pid, open => 2, stdin => $iw, pending => '', closing => 0 };
  $bypid{$pid} = $id;
}

sub endStdin {
  my ($run) = @_;
  close $run->{stdin} if defined $run->{stdin};
  $run->{stdin} = undef;
  $run->{pending} = '';
}

sub command {
  my ($type, $id, $payload) = @_;
  return start($id, $payload) if $type eq 'R';
  my $run = $runs{$id} or return;
  if ($type eq 'I') { $run->{pending} .= $payload if defined $run->{stdin} }
  elsif ($type eq 'C') { $run->{closing} = 1 }
  elsif ($type eq 'K') { kill(-$payload, $run->{pid}) unless defined $run->{code} }
}

sub reap {
  while ((my $pid = waitpid(-1, POSIX::WNOHANG())) > 0) {
    my $id = delete $bypid{$pid};
    next unless defined $id;
    my $run = $runs{$id};
    $run->{code} = ($? & 127) ? 128 + ($? & 127) : ($? >> 8);
    $run->{until} = ticks() + $drainTicks;
    endStdin($run);
  }
}

sub closeReader {
  my ($fd) = @_;
  my $reader = delete $readers{$fd} or return;
  close $reader->[2];
  $runs{$reader->[0]}{open}--;
}

# Runs whose command exited and whose output is read (or waited for long enough) are reported.
sub finish {
  my $now = ticks();
  for my $id (keys %runs) {
    my $run = $runs{$id};
    next unless defined $run->{code} && ($run->{open} == 0 || $now >= $run->{until});
    for my $fd (keys %readers) { closeReader($fd) if $readers{$fd}[0] == $id }
    frame('X', $id, $run->{code});
    delete $runs{$id};
  }
}

# How long select may sleep. A command's exit closes its pipes just before it becomes reapable,
# and its SIGCHLD can land between reap() and select: so a run whose pipes closed is polled every
# millisecond, one that is draining every tick, and any other run every 50 ms in case its signal
# came too early to wake select.
sub timeout {
  my $wait;
  for my $run (values %runs) {
    my $t = defined $run->{code} ? 0.01 : $run->{open} == 0 ? 0.001 : 0.05;
    $wait = $t if !defined $wait || $t < $wait;
  }
  return $wait;
}

nonblocking($host);
while (1) {
  reap();
  finish();
  last if ($hostEnd || $ending) && !%runs;
  my ($r, $w) = ('', '');
  vec($r, fileno $host, 1) = 1 unless $hostEnd || $ending;
  if (length $out < $outLimit) { vec($r, $_, 1) = 1 for keys %readers }
  vec($w, fileno $host, 1) = 1 if length $out && !$hostEnd;
  for my $run (values %runs) {
    next unless defined $run->{stdin};
    if (length $run->{pending}) { vec($w, fileno $run->{stdin}, 1) = 1 }
    elsif ($run->{closing}) { endStdin($run) }
  }
  my $n = select(my $rr = $r, my $ww = $w, undef, timeout());
  next if $n <= 0;
  if (vec($rr, fileno $host, 1)) {
    my $got = sysread($host, $in, 1 << 16, length $in);
    $hostEnd = 1 if !$got && (defined $got || !$!{EAGAIN});
    while (length $in >= 9) {
      my ($type, $id, $length) = unpack('a N N', $in);
      last if length $in < 9 + $length;
      my $payload = substr($in, 9, $length);
      substr($in, 0, 9 + $length) = '';
      command($type, $id, $payload);
    }
  }
  for my $fd (keys %readers) {
    next unless vec($rr, $fd, 1);
    my ($id, $type, $fh) = @{$readers{$fd}};
    my $got = sysread($fh, my $chunk, 1 << 16);
    if ($got) { frame($type, $id, $chunk) }
    elsif (defined $got || !$!{EAGAIN}) { closeReader($fd) }
  }
  if (vec($ww, fileno $host, 1)) {
    my $sent = syswrite($host, $out);
    if (defined $sent) { substr($out, 0, $sent) = '' }
    elsif (!$!{EAGAIN}) { $hostEnd = 1; $out = '' }
  }
  for my $run (values %runs) {
    next unless defined $run->{stdin} && vec($ww, fileno $run->{stdin}, 1);
    my $sent = syswrite($run->{stdin}, $run->{pending});
    if (defined $sent) { substr($run->{pending}, 0, $sent) = '' }
    elsif (!$!{EAGAIN}) { endStdin($run) }
  }
}
`

/** The script without its comments and indentation: it travels on a command line (`perl -e`). */
export const launcherScript = source.split("\n").map((line) => line.trim()).filter((line) =>
  line !== "" && !line.startsWith("#")
).join("\n")
