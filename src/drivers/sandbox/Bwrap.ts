/** The bubblewrap command line of a machine: what it sees, and nothing else (docs/drivers.md). */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { diskFolders } from "../MachineFiles.js"

export { diskFolders }

/** PATH inside a machine (and for the commands exec runs). */
export const machinePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/** Where the agents' tools folder (`svc agents install`) is inside every machine, read-only. */
export const toolsMount = "/svc/agents"

/** HOME inside a machine: processes run as root there (in their own user namespace). */
export const machineHome = "/root"

/**
 * The machine's first process, pid 2 under bubblewrap's own init (pid 1, which reaps orphans and
 * ends the namespace when this process ends). It ignores SIGTERM so that a polite stop can end
 * every other process first and still find the machine there; a stop ends it by killing pid 1.
 * It runs once pid 1 has set the machine's root up: it says so with a byte on `readyFd` (then
 * closes it, so nothing else in the machine holds it).
 */
const payload = (readyFd: number) => [
  "/bin/sh",
  "-c",
  `trap '' TERM; echo >&${readyFd}; exec sleep infinity ${readyFd}>&-`
]

/** Host top-level entries that are symlinks into /usr on merged-/usr systems, or folders otherwise. */
const usrLinks = ["bin", "sbin", "lib", "lib64", "lib32", "libx32"]

const rootEntry = (name: string): ReadonlyArray<string> => {
  const path = `/${name}`
  try {
    const stat = NodeFs.lstatSync(path)
    if (stat.isSymbolicLink()) return ["--symlink", NodeFs.readlinkSync(path), path]
    if (stat.isDirectory()) return ["--ro-bind", path, path]
  } catch {
    // not on this host
  }
  return []
}

/** Host secrets under /etc that a machine must not read: hidden behind /dev/null. */
export const maskedFiles = () => {
  const files = ["/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers"]
  try {
    for (const name of NodeFs.readdirSync("/etc/ssh")) {
      if (name.startsWith("ssh_host_") && name.endsWith("_key")) files.push(`/etc/ssh/${name}`)
    }
  } catch {
    // no ssh server
  }
  return files.filter((file) => NodeFs.existsSync(file))
}

const masked = () => maskedFiles().flatMap((file) => ["--ro-bind", "/dev/null", file])

/** The host folders a machine sees read-only: /usr, /etc, and /bin, /lib... where they are folders. */
export const readOnlyFolders = () => [
  "/usr",
  "/etc",
  ...usrLinks.map((name) => `/${name}`).filter((path) => rootEntry(path.slice(1))[0] === "--ro-bind")
]

/**
 * Where an isolated boot's spawner puts what bwrap reads (Spawner.ts `Isolation.data`): the
 * machine's resolv.conf and the seccomp program, on these descriptors.
 */
export const isolatedFds = { resolvConf: 7, seccomp: 8 } as const

/**
 * Where an isolated boot's spawner mounts, in its own mount namespace, the machine's disk (idmapped)
 * and the agents' tools, for bwrap to bind: a folder the machine's root can walk to (the data dir
 * is the host root's alone). Made empty on the host once; nothing is mounted there for the host.
 */
export const stage = NodeFs.existsSync("/run") ? "/run/svc-stage" : "/tmp/svc-stage"

export interface BwrapOptions {
  /** The machine's disk folder on the host; each of `diskFolders` is bound at `/<folder>`. */
  readonly diskDir: string
  readonly hostname: string
  /** The machine's resolv.conf on the host, bound at `resolvTarget` (docs/drivers.md "Network"). */
  readonly resolvConf: string
  /** /etc/resolv.conf, or the file it links to (Network.resolvConfTarget). */
  readonly resolvTarget: string
  /** The agents' tools folder on the host, bound read-only at `toolsMount` when it exists. */
  readonly toolsDir?: string | undefined
  /** The fd bubblewrap writes `{"child-pid": N, ...}` to once the machine runs. */
  readonly infoFd: number
  /** The fd the machine's first process writes a byte to once it runs (see `payload`). */
  readonly readyFd: number
  /**
   * Isolated (docs/drivers.md "Isolation"): bwrap runs as root of the machine's user namespace,
   * made by the spawner, which also mounted the read-only folders and the masks (locked) and hands
   * the resolv.conf and the seccomp program on `isolatedFds`.
   */
  readonly isolated?: boolean | undefined
}

/**
 * The arguments of `bwrap`. The machine's environment is not among them (command lines are
 * readable by every host user): bwrap passes on the environment it is spawned with.
 */
export const bwrapArgs = (options: BwrapOptions): ReadonlyArray<string> => [
  // New user (when the host allows), pid, mount, ipc, uts and cgroup namespaces. The network
  // namespace is the one bwrap is started in: the machine's own, made before (Network.ts).
  // Isolated, the user namespace is the one bwrap runs in (the machine's, made by the spawner).
  ...(options.isolated === true
    ? ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup", "--seccomp", String(isolatedFds.seccomp)]
    : ["--unshare-all", "--share-net"]),
  "--new-session",
  "--ro-bind",
  "/usr",
  "/usr",
  "--ro-bind",
  "/etc",
  "/etc",
  ...(options.isolated === true
    ? ["--ro-bind-data", String(isolatedFds.resolvConf), options.resolvTarget]
    : [...masked(), "--ro-bind", options.resolvConf, options.resolvTarget]),
  ...usrLinks.flatMap(rootEntry),
  "--proc",
  "/proc",
  "--dev",
  "/dev",
  ...diskFolders.flatMap((folder) => [
    "--bind",
    NodePath.join(options.isolated === true ? `${stage}/disk` : options.diskDir, folder),
    `/${folder}`
  ]),
  ...(options.toolsDir === undefined
    ? []
    : ["--ro-bind-try", options.isolated === true ? `${stage}/tools` : options.toolsDir, toolsMount]),
  "--hostname",
  options.hostname,
  "--chdir",
  machineHome,
  "--info-fd",
  String(options.infoFd),
  "--",
  ...payload(options.readyFd)
]

/** A host name from a machine id: `svc-` and the id's last 12 letters or digits. */
export const hostnameOf = (id: string) => `svc-${id.toLowerCase().replace(/[^a-z0-9]/g, "").slice(-12) || "machine"}`
