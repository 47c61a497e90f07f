/**
 * A sandbox machine's network (docs/drivers.md "Network"): its own network namespace, made before
 * bwrap by `unshare --net` so that it belongs to the host's user namespace, not the machine's (the
 * machine's root holds every capability in its own user namespace, none over this one: it cannot
 * change its interfaces, routes or rules). Without internet access it has only `lo`. With it, a
 * slirp4netns process (user-mode TCP/IP on the host's sockets) gives it a `tap0` and a default
 * route, and an nftables table in the namespace rejects what the machine must not reach.
 *
 * The shell side (net.sh) runs at boot inside the new namespace, and for a live toggle from svc.
 * The machine's folder holds what it reads and writes: `net.nft` (the rules), `resolv.conf` (bound
 * at the machine's /etc/resolv.conf), `slirp.pid` (pid and start time of its slirp4netns).
 */
import { Effect } from "effect"
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { embeddedText } from "../Embedded.js"
import { clockTicks, procStat } from "../HostProcess.js"
import { DriverError } from "../MachineDriver.js"
import { writeAtomic } from "../MachineFiles.js"

const script = embeddedText("sandbox/net.sh")

/** slirp4netns's network (its default `--cidr`): the machine is .100, the host's loopback .2, DNS .3. */
export const slirpHost = "10.0.2.2"
export const slirpDns = "10.0.2.3"

export interface NetworkSettings {
  /** `SVC_MACHINE_LAN`: machines with internet access may reach private (LAN) ranges. */
  readonly lan: boolean
  /**
   * `SVC_MACHINE_HOST_PORTS`: TCP ports of the host's loopback that machines with internet access
   * reach at `10.0.2.2:<port>` (a local model server, say). Nothing else of the host's loopback.
   */
  readonly hostPorts: ReadonlyArray<number>
  /**
   * The resolv.conf whose first nameserver gets the machines' DNS (slirp4netns forwards 10.0.2.3
   * there); the host's /etc/resolv.conf when absent. A driver option, not a setting: tests point it
   * at a resolver of their own.
   */
  readonly resolvConf?: string | undefined
}

export const defaultSettings: NetworkSettings = { lan: false, hostPorts: [] }

/** Never reachable: this network, loopback, link-local (169.254.169.254 among it), multicast, reserved. */
const alwaysBlocked = ["0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/3"]
/** Private ranges (RFC 1918 and the carrier-grade NAT range): reachable with `lan` only. */
const lanRanges = ["10.0.0.0/8", "100.64.0.0/10", "172.16.0.0/12", "192.168.0.0/16"]

/** The IPv4 addresses of this host's interfaces (svc's network namespace), loopback excluded. */
export const hostAddresses = (): ReadonlyArray<string> => {
  const found = new Set<string>()
  for (const entries of Object.values(NodeOs.networkInterfaces())) {
    for (const entry of entries ?? []) {
      if (entry.family === "IPv4" && !entry.internal) found.add(entry.address)
    }
  }
  return [...found].sort()
}

/**
 * The machine's nftables table. Output only: nothing comes in but answers (slirp4netns forwards no
 * port into the machine). Rejected, not dropped, so a blocked connection fails at once.
 */
export const rules = (settings: NetworkSettings, host: ReadonlyArray<string>) => {
  const blocked = [...alwaysBlocked, ...(settings.lan ? [] : lanRanges)]
  return [
    "table inet svc {",
    "  chain output {",
    "    type filter hook output priority filter; policy accept;",
    "    oifname \"lo\" accept",
    `    ip daddr ${slirpDns} meta l4proto { tcp, udp } th dport 53 accept`,
    ...(settings.hostPorts.length === 0 ? [] : [
      `    ip daddr ${slirpHost} tcp dport { ${settings.hostPorts.join(", ")} } accept`
    ]),
    // slirp4netns's own addresses (its gateway is the host), also when LAN ranges are allowed.
    "    ip daddr 10.0.2.0/24 reject",
    // No IPv6 path (slirp4netns runs without it): nothing leaves that way.
    "    meta nfproto ipv6 reject",
    `    ip daddr { ${blocked.join(", ")} } reject`,
    ...(host.length === 0 ? [] : [`    ip daddr { ${host.join(", ")} } reject`]),
    "  }",
    "}",
    ""
  ].join("\n")
}

export interface NetPaths {
  /** The machine's folder (`<data dir>/machines/<id>`). */
  readonly dir: string
  readonly rules: string
  /** The same, replacing the table a running machine has: one transaction, never without rules. */
  readonly replaceRules: string
  readonly resolvConf: string
  readonly slirpPid: string
}

export const netPaths = (dir: string): NetPaths => ({
  dir,
  rules: NodePath.join(dir, "net.nft"),
  replaceRules: NodePath.join(dir, "net-replace.nft"),
  resolvConf: NodePath.join(dir, "resolv.conf"),
  slirpPid: NodePath.join(dir, "slirp.pid")
})

/**
 * Writes what net.sh and bwrap read: the rules with the host's current addresses (so a toggle or
 * a boot takes addresses the host gained since), and the machine's resolv.conf (slirp4netns's DNS,
 * which forwards to the host's resolver).
 */
export const writeFiles = (paths: NetPaths, settings: NetworkSettings) => {
  const table = rules(settings, hostAddresses())
  writeAtomic(paths.rules, table)
  writeAtomic(paths.replaceRules, `table inet svc\ndelete table inet svc\n${table}`)
  if (!NodeFs.existsSync(paths.resolvConf)) writeAtomic(paths.resolvConf, `nameserver ${slirpDns}\n`)
}

/**
 * Where the machine's resolv.conf is bound: /etc/resolv.conf, or where it points when it is a
 * symlink (systemd-resolved's stub file under /run, which a machine does not otherwise have).
 */
export const resolvConfTarget = () => {
  try {
    const link = NodeFs.readlinkSync("/etc/resolv.conf")
    return NodePath.resolve("/etc", link)
  } catch {
    return "/etc/resolv.conf"
  }
}

export interface NetTools {
  readonly unshare: string
  readonly ip: string
  /** For internet access; without them a machine with internet access cannot boot. */
  readonly slirp4netns?: string | undefined
  readonly nft?: string | undefined
}

/** The network namespace of process `pid` as readlink shows it (`net:[inode]`), if it can be read. */
export const netnsOf = (pid: number) => {
  try {
    return NodeFs.readlinkSync(`/proc/${pid}/ns/net`)
  } catch {
    return undefined
  }
}

/** svc's own network namespace, where slirp4netns makes its sockets. */
const hostNetns = () => `/proc/${process.pid}/ns/net`

/** net.sh's HOST_LOOPBACK: 10.0.2.2 leads to the host's loopback only when some ports are allowed there. */
const loopback = (settings: NetworkSettings) => settings.hostPorts.length === 0 ? "0" : "1"

const missing = (tools: NetTools) =>
  tools.slirp4netns === undefined || tools.nft === undefined
    ? "internet access needs slirp4netns and nft (Debian packages slirp4netns, nftables)"
    : undefined

/**
 * A machine's boot around `bwrap` (its argv). `argv`: a new network namespace set up by net.sh
 * (lo, then the internet path when asked), which then runs bwrap. Or, for a spawner that makes the
 * namespace itself (lo up): `afterNetns` (bwrap) with `netJob` (net.sh setup: the internet path,
 * beside bwrap; absent without internet access). Answers the reason instead when internet access
 * cannot be given.
 */
export const bootCommand = (
  tools: NetTools,
  settings: NetworkSettings,
  paths: NetPaths,
  internet: boolean,
  bwrap: ReadonlyArray<string>
):
  | {
    readonly argv: ReadonlyArray<string>
    readonly afterNetns: ReadonlyArray<string>
    readonly netJob: ReadonlyArray<string> | undefined
  }
  | string =>
{
  const why = internet ? missing(tools) : undefined
  if (why !== undefined) return why
  const options = [paths.dir, hostNetns(), internet ? "1" : "0", loopback(settings), settings.resolvConf ?? ""]
  const net = (command: string) => ["/bin/sh", "-c", script, "svc-net", command, ...options]
  return {
    argv: [tools.unshare, "--net", "--", ...net("boot"), "--", ...bwrap],
    afterNetns: bwrap,
    netJob: internet ? net("setup") : undefined
  }
}

/** The pid of the machine's slirp4netns while it runs (its pid and start time as recorded). */
export const slirpOf = (paths: NetPaths): number | undefined => {
  let text: string
  try {
    text = NodeFs.readFileSync(paths.slirpPid, "utf8")
  } catch {
    return undefined
  }
  const [pid, start] = text.trim().split(" ").map(Number)
  if (pid === undefined || start === undefined || !Number.isInteger(pid) || pid <= 0) return undefined
  const stat = procStat(pid)
  // A zombie is dead: its parent (init, once the starting shell is gone) may reap it late.
  return stat !== undefined && stat.starttime === start && stat.state !== "Z" ? pid : undefined
}

/** Whether the machine (pid 1 `pid`) has its internet path: slirp4netns runs and `tap0` is there. */
export const attached = (paths: NetPaths, pid: number) => {
  if (slirpOf(paths) === undefined) return false
  try {
    return /^\s*tap0:/m.test(NodeFs.readFileSync(`/proc/${pid}/net/dev`, "utf8"))
  } catch {
    return false
  }
}

/** Whether the namespace of pid 1 `pid` has no interface but `lo`. */
export const detached = (paths: NetPaths, pid: number) => {
  if (slirpOf(paths) !== undefined) return false
  try {
    return !/^\s*tap0:/m.test(NodeFs.readFileSync(`/proc/${pid}/net/dev`, "utf8"))
  } catch {
    return true
  }
}

/** Now, in the clock ticks of /proc/<pid>/stat's start times (since the host booted). */
export const ticksNow = () => Math.floor(Number(NodeFs.readFileSync("/proc/uptime", "utf8").split(" ")[0]) * clockTicks)

/**
 * Ends the machine's slirp4netns, if it runs (a detach, a stop, a machine that ended while svc was
 * away; with `startedBefore`, only one started before that tick: not a boot's under way), and
 * answers a check of whether the process is gone (its tap interface goes with it).
 */
export const killSlirp = (paths: NetPaths, startedBefore?: number): () => boolean => {
  const found = slirpOf(paths)
  const start = found === undefined ? undefined : procStat(found)?.starttime
  const pid = startedBefore === undefined || (start !== undefined && start < startedBefore) ? found : undefined
  if (pid !== undefined) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // gone meanwhile
    }
  }
  if (pid !== undefined || found === undefined) NodeFs.rmSync(paths.slirpPid, { force: true })
  return () => {
    if (pid === undefined) return true
    const stat = procStat(pid)
    return stat === undefined || stat.starttime !== start || stat.state === "Z"
  }
}

/**
 * Runs net.sh `attach` for the running machine whose pid 1 is `pid` and whose namespace is `netns`
 * (recorded at boot: net.sh checks it is still the one it enters), from svc's namespace, in a
 * session of its own (the slirp4netns it starts outlives svc).
 */
export const attach = (
  tools: NetTools,
  settings: NetworkSettings,
  paths: NetPaths,
  pid: number,
  netns: string
) =>
  Effect.async<void, DriverError>((resume) => {
    const why = missing(tools)
    if (why !== undefined) return resume(Effect.fail(new DriverError({ message: why })))
    const args = [
      paths.dir,
      `/proc/${pid}/ns/net`,
      hostNetns(),
      loopback(settings),
      settings.resolvConf ?? "",
      "0",
      netns
    ]
    const child = NodeChild.spawn("/bin/sh", ["-c", script, "svc-net", "attach", ...args], {
      detached: true,
      env: { PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin" },
      stdio: ["ignore", "ignore", "pipe"]
    })
    let stderr = ""
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => void (stderr += chunk))
    child.on("error", (cause) => resume(Effect.fail(new DriverError({ message: "network attach", cause }))))
    child.on("close", (code) =>
      resume(
        code === 0
          ? Effect.void
          : Effect.fail(new DriverError({ message: `network attach: ${stderr.trim() || `exit ${code}`}` }))
      ))
  })
