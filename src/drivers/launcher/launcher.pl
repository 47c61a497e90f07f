# The svc launcher: one long-lived process inside a running machine that starts exec's commands,
# so an exec costs a fork inside the machine instead of a host spawn plus nsenter every time.
# Loaded by Script.ts; it travels on a command line (perl -e) without its comments.
# Frames both ways on fd 3: type (1 byte), run id (u32 BE), payload length (u32 BE), payload.
#   from svc: R run (cwd, stdin mode p|n, argc, argv..., env name, value, ... joined by NUL),
#             Q run once (the operation id, NUL, then R's payload whose argv is the exactly-once
#               wrapper's: see `claim` below and docs/drivers.md "Exactly once"),
#             T run on a terminal (cols, NUL, rows, NUL, then R's payload): a new PTY of the machine
#               (/dev/ptmx, its own session with the PTY as controlling terminal), stdout and stderr
#               both the PTY's bytes as O frames, I frames typed into it,
#             W resize a terminal run (payload: "cols rows"; the kernel tells its foreground SIGWINCH),
#             I stdin bytes, C close stdin, K signal the run's process group (payload: the number;
#               a terminal run's whole session, whatever process groups its shell made for jobs)
#   to svc:   O stdout bytes, E stderr bytes, X exit code (128 + n after a death by signal n)
# Perl (core modules only) because perl-base is essential on Debian: every machine has it.
use strict;
use warnings;
$0 = 'svc-launcher';
use POSIX ();
use Fcntl ();
use Config ();

# Leave nsenter (svc's child, outside the machine) behind: the machine's init adopts the launcher.
# So freezing the machine cannot stop nsenter for good (it stops itself when its child stops), and
# the CPU time of what the launcher reaped stays counted inside the machine after it ends.
defined(my $daemon = fork) or die "svc-launcher: cannot fork: $!\n";
POSIX::_exit(0) if $daemon;

# A machine's launcher gets the machine's seccomp program (src/drivers/sandbox/Seccomp.ts, as hex)
# as its argument: every command it forks inherits the filter. None: no filter (the process driver).
if (@ARGV && $ARGV[0] =~ /^(?:[0-9a-f]{16})+$/) {
  my $filter = pack('H*', $ARGV[0]);
  my %seccompCall = (x86_64 => 317, aarch64 => 277);
  my ($arch) = $Config::Config{archname} =~ /^([^-]+)/;
  my $call = $seccompCall{$arch // ''} or die "svc-launcher: no seccomp on this architecture\n";
  # struct sock_fprog: the instruction count, then a pointer to them. SECCOMP_SET_MODE_FILTER: 1.
  my $fprog = pack('S x![P] P', length($filter) / 8, $filter);
  syscall($call, 1, 0, $fprog) == 0 or die "svc-launcher: cannot install the seccomp filter: $!\n";
}

$SIG{PIPE} = 'IGNORE';
my $ending = 0;
$SIG{TERM} = sub { $ending = 1 };
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
# SIGCHLD writes to a pipe that select watches: a command's exit wakes select even when the
# signal lands while the loop runs Perl code (a handler that only returned would be missed until
# select's timeout). Made after the inherited descriptors are closed, which would close it too.
pipe(my $exited, my $onExit) or die "svc-launcher: cannot make a pipe: $!\n";
$SIG{CHLD} = sub { syswrite($onExit, 'c') };

# The machine's boot as the exactly-once wrapper names it (field 22 of pid 1's stat, split on
# blanks as the shell splits it): the launcher lives within one boot.
my $boot = do {
  open(my $stat, '<', '/proc/1/stat') or die "svc-launcher: no /proc/1/stat: $!\n";
  (split ' ', scalar <$stat>)[21];
};

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

# Frames go to svc as soon as they are made, without waiting for select to find the socket
# writable (it nearly always is); what the socket does not take now waits for select.
sub flush {
  return unless length $out && !$hostEnd;
  my $sent = syswrite($host, $out);
  if (defined $sent) { substr($out, 0, $sent) = '' }
  elsif (!$!{EAGAIN}) { $hostEnd = 1; $out = '' }
}

# Files made ahead of need, in the claims' folder (links stay within one file system): making a
# file is slow on some disks, linking a spare is not (docs/benchmarks.md "Files made ahead"). The
# link fails when the name exists, so a claim stays exclusive, and the name appears with its
# content. Each launcher makes and uses only its own (named by its pid), so no two use one file.
my ($spareDir, @spares);
my $spareCount = 0;
my $sparesWanted = 4;

sub startSpares {
  my ($dir) = @_;
  $spareDir = $dir;
  mkdir $dir unless -d $dir;
  # Those of launchers that are gone (a stop, a crash) are only names: one may still be a claim's.
  opendir(my $spareList, $dir) or return $spareDir = '';
  for (readdir $spareList) { unlink "$dir/$_" if /^(\d+)\.\d+$/ && $1 != $$ && !kill(0, $1) && $!{ESRCH} }
  closedir $spareList;
}

sub makeSpare {
  for (1 .. 4) {
    my $name = "$spareDir/$$." . $spareCount++;
    next unless sysopen(my $spare, $name, Fcntl::O_WRONLY() | Fcntl::O_CREAT() | Fcntl::O_EXCL(), 0666);
    close $spare;
    return push @spares, $name;
  }
  $spareDir = '';
}

# Puts a file holding $content at $path unless something is there already (then answers false).
sub publish {
  my ($path, $content) = @_;
  if (defined(my $spare = shift @spares)) {
    if (open(my $fh, '>', $spare)) {
      my $done = syswrite($fh, $content);
      if (close($fh) && defined $done && $done == length $content) {
        if (link($spare, $path)) { unlink $spare; return 1 }
        if ($!{EEXIST}) { unshift @spares, $spare; return 0 }
      }
    }
    unlink $spare;
  }
  sysopen(my $file, $path, Fcntl::O_WRONLY() | Fcntl::O_CREAT() | Fcntl::O_EXCL(), 0666) or return 0;
  my $done = syswrite($file, $content);
  close $file;
  return defined $done && $done == length $content;
}

# The exit code of a claimed run, where a re-applied operation reads it (the wrapper's format).
sub recordExit {
  my ($exitFile, $code) = @_;
  return unless defined $exitFile;
  return if publish($exitFile, "$code\n");
  open(my $exit, '>', $exitFile) or return;
  syswrite($exit, "$code\n");
  close $exit;
}

# A run that cannot start ends with 126, recorded first when it was claimed (else a re-applied
# operation would wait for it as long as the launcher lives).
sub refuse {
  my ($id, $message, $exitFile) = @_;
  recordExit($exitFile, 126);
  frame('E', $id, "svc: $message\n");
  frame('X', $id, '126');
}

# The exactly-once claim of ExactlyOnce.ts, kept here on its common path: the claim file made
# exclusively, holding the boot and the pid of a process that outlives the command (the launcher,
# which writes the exit file when it reaps the command, also after svc went away). Answers the
# exit file's path, or undef when the claim exists already (a re-applied operation) or cannot be
# made: then the wrapper's shell script runs instead, and its waiting and its errors are the only
# ones. Saves the shell's start on every exec.
sub claim {
  my ($operation, $home) = @_;
  return unless defined $home && $operation =~ /^[A-Za-z0-9._-]+$/;
  my $dir = "$home/.svc/ops";
  unless (-d $dir) { mkdir "$home/.svc"; mkdir $dir }
  startSpares("$dir/spare") unless defined $spareDir;
  return publish("$dir/$operation.claim", "$boot $$\n") ? "$dir/$operation.exit" : undef;
}

# Terminal ioctls (the same numbers on x86_64 and aarch64: asm-generic).
my %tty = (TIOCSPTLCK => 0x40045431, TIOCGPTN => 0x80045430, TIOCSCTTY => 0x540E, TIOCSWINSZ => 0x5414);

# ioctl writes into its argument: each is a variable of its own, never a temporary.
sub setSize {
  my ($fh, $cols, $rows) = @_;
  my $size = pack('S4', $rows, $cols, 0, 0);
  return ioctl($fh, $tty{TIOCSWINSZ}, $size);
}

# A new PTY pair of the machine's devpts, by hand (perl-base has no IO::Pty): the master and the
# slave's path.
sub openPty {
  my ($cols, $rows) = @_;
  sysopen(my $master, '/dev/ptmx', Fcntl::O_RDWR() | POSIX::O_NOCTTY()) or return;
  my $unlock = pack('i', 0);
  ioctl($master, $tty{TIOCSPTLCK}, $unlock) or return;
  my $number = pack('i', 0);
  ioctl($master, $tty{TIOCGPTN}, $number) or return;
  setSize($master, $cols, $rows) or return;
  return ($master, '/dev/pts/' . unpack('i', $number));
}

# Signals every process of the session $sid (a terminal run's): its jobs have process groups of
# their own. A process that left the session (setsid, nohup-like) is left alone.
sub signalSession {
  my ($sid, $signal) = @_;
  opendir(my $proc, '/proc') or return;
  for my $pid (grep { /^\d+$/ } readdir $proc) {
    open(my $stat, '<', "/proc/$pid/stat") or next;
    my $line = <$stat> // '';
    close $stat;
    my @fields = split ' ', substr($line, rindex($line, ')') + 1);
    kill($signal, $pid) if ($fields[3] // -1) == $sid;
  }
  closedir $proc;
}

sub start {
  my ($id, $payload, $once, $pty) = @_;
  my ($cwd, $mode, $argc, @rest) = split /\0/, $payload, -1;
  my @argv = splice @rest, 0, $argc;
  my %env = @rest;
  # With an operation id, argv is the wrapper's (sh -c script svc-once id command...).
  my $exitFile = defined $once ? claim($once, $env{HOME}) : undef;
  splice @argv, 0, 5 if defined $exitFile;
  my ($or, $ow, $er, $ew, $ir, $iw, $slave);
  if ($pty) {
    ($or, $slave) = openPty(@$pty) or return refuse($id, "cannot make a terminal: $!", $exitFile);
    open($iw, '+<&', $or) or return refuse($id, "cannot make a terminal: $!", $exitFile);
  } else {
    pipe($or, $ow) && pipe($er, $ew) && ($mode ne 'p' || pipe($ir, $iw)) or return refuse($id, "cannot make pipes: $!", $exitFile);
  }
  my $pid = fork;
  return refuse($id, "cannot fork: $!", $exitFile) unless defined $pid;
  if ($pid == 0) {
    $SIG{$_} = 'DEFAULT' for qw(PIPE TERM CHLD);
    POSIX::setsid();
    if ($pty) {
      # Opened by a session leader without a terminal, the slave becomes its controlling terminal.
      my $fd = POSIX::open($slave, POSIX::O_RDWR());
      POSIX::_exit(126) unless defined $fd;
      ioctl(STDIN, $tty{TIOCSCTTY}, 0) if POSIX::dup2($fd, 0);
      POSIX::dup2($fd, 1);
      POSIX::dup2($fd, 2);
      POSIX::close($fd) if $fd > 2;
    } else {
      if (defined $ir) { POSIX::dup2(fileno $ir, 0) } else { open(STDIN, '<', '/dev/null') }
      POSIX::dup2(fileno $ow, 1);
      POSIX::dup2(fileno $ew, 2);
    }
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
  close $ow if defined $ow;
  close $ew if defined $ew;
  close $ir if defined $ir;
  for (grep { defined $_->[0] } [$or, 'O'], [$er, 'E']) {
    nonblocking($_->[0]);
    $readers{fileno $_->[0]} = [$id, $_->[1], $_->[0]];
  }
  nonblocking($iw) if defined $iw;
  $runs{$id} = {
    pid => $pid, open => $pty ? 1 : 2, stdin => $iw, pending => '', closing => 0, exitFile => $exitFile,
    master => $pty ? $or : undef
  };
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
  return start($id, $2, $1) if $type eq 'Q' && $payload =~ /^([^\0]*)\0(.*)$/s;
  return start($id, $3, undef, [$1, $2]) if $type eq 'T' && $payload =~ /^(\d+)\0(\d+)\0(.*)$/s;
  my $run = $runs{$id} or return;
  if ($type eq 'I') { $run->{pending} .= $payload if defined $run->{stdin} }
  elsif ($type eq 'C') { $run->{closing} = 1 }
  elsif ($type eq 'W') {
    setSize($run->{master}, $1, $2) if $run->{master} && $payload =~ /^(\d+) (\d+)$/;
  }
  elsif ($type eq 'K' && $run->{master}) { signalSession($run->{pid}, $payload) }
  elsif ($type eq 'K') { kill(-$payload, $run->{pid}) unless defined $run->{code} }
}

sub reap {
  while ((my $pid = waitpid(-1, POSIX::WNOHANG())) > 0) {
    my $id = delete $bypid{$pid};
    next unless defined $id;
    my $run = $runs{$id};
    $run->{code} = ($? & 127) ? 128 + ($? & 127) : ($? >> 8);
    # Before svc hears of it: a re-applied operation reads the code from there.
    recordExit($run->{exitFile}, $run->{code});
    $run->{until} = ticks() + $drainTicks;
    # A terminal's shell is gone: what is left of its session hangs up, as on a closed line.
    signalSession($pid, 'HUP') if $run->{master};
    endStdin($run);
  }
}

sub closeReader {
  my ($fd) = @_;
  my $reader = delete $readers{$fd} or return;
  close $reader->[2];
  $runs{$reader->[0]}{open}--;
}

sub readFrom {
  my ($fd) = @_;
  my ($id, $type, $fh) = @{$readers{$fd}};
  my $got = sysread($fh, my $chunk, 1 << 16);
  if ($got) { frame($type, $id, $chunk) }
  elsif (defined $got || !$!{EAGAIN}) { closeReader($fd) }
  return $got;
}

# Runs whose command exited and whose output is read (or waited for long enough) are reported.
# The output of an exited command is read here at once: its pipes are usually closed already, and
# waiting for select to say so would cost a round per pipe.
sub finish {
  my $now = ticks();
  for my $id (keys %runs) {
    my $run = $runs{$id};
    next unless defined $run->{code};
    for my $fd (grep { $readers{$_}[0] == $id } keys %readers) {
      1 while length $out < $outLimit && exists $readers{$fd} && readFrom($fd);
    }
    next unless $run->{open} == 0 || $now >= $run->{until};
    for my $fd (keys %readers) { closeReader($fd) if $readers{$fd}[0] == $id }
    frame('X', $id, $run->{code});
    delete $runs{$id};
  }
}

# How long select may sleep. A command's exit closes its pipes just before it becomes reapable;
# its SIGCHLD wakes select through the pipe, but Perl runs the handler between its own steps, so a
# signal landing inside the select step itself, before the system call, waits for the timeout: a
# run whose pipes closed is polled every millisecond, one that is draining every tick, and any
# other run every 50 ms.
sub timeout {
  my $wait;
  for my $run (values %runs) {
    my $t = defined $run->{code} ? 0.01 : $run->{open} == 0 ? 0.001 : 0.05;
    $wait = $t if !defined $wait || $t < $wait;
  }
  return $wait;
}

nonblocking($_) for $host, $exited, $onExit;
while (1) {
  reap();
  finish();
  flush();
  last if ($hostEnd || $ending) && !%runs;
  my ($r, $w) = ('', '');
  vec($r, fileno $host, 1) = 1 unless $hostEnd || $ending;
  vec($r, fileno $exited, 1) = 1;
  if (length $out < $outLimit) { vec($r, $_, 1) = 1 for keys %readers }
  vec($w, fileno $host, 1) = 1 if length $out && !$hostEnd;
  for my $run (values %runs) {
    next unless defined $run->{stdin};
    if (length $run->{pending}) { vec($w, fileno $run->{stdin}, 1) = 1 }
    elsif ($run->{closing}) { endStdin($run) }
  }
  # Spares are made when nothing runs and nothing waits, one per round, so a frame that arrives
  # meanwhile waits for one file at most.
  my $refill = !%runs && defined $spareDir && $spareDir ne '' && @spares < $sparesWanted;
  my $n = select(my $rr = $r, my $ww = $w, undef, $refill ? 0 : timeout());
  if ($n <= 0) {
    makeSpare() if $refill;
    next;
  }
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
  for my $fd (keys %readers) { readFrom($fd) if vec($rr, $fd, 1) }
  1 while vec($rr, fileno $exited, 1) && sysread($exited, my $signals, 64);
  for my $run (values %runs) {
    next unless defined $run->{stdin} && vec($ww, fileno $run->{stdin}, 1);
    my $sent = syswrite($run->{stdin}, $run->{pending});
    if (defined $sent) { substr($run->{pending}, 0, $sent) = '' }
    elsif (!$!{EAGAIN}) { endStdin($run) }
  }
}
