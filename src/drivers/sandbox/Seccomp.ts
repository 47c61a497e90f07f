/**
 * The seccomp filter of every machine process (docs/drivers.md "Isolation"): a classic BPF program
 * that answers EPERM to a few system calls a machine's root could otherwise make in its own user
 * namespace, and that reach kernel state shared with the host; everything else is allowed. Given
 * to bwrap (`--seccomp`, the machine's first process) and to the launcher (every exec, terminal).
 *
 * - keyctl, add_key, request_key: the kernel keyrings are not namespaced; a machine could read or
 *   fill the keys of the user its ids share a keyring quota with, and they are a classic source
 *   of kernel bugs.
 * - bpf: BPF programs and maps; unprivileged BPF is the source of many kernel escapes.
 * - perf_event_open: performance counters see the whole CPU (side channels, kernel addresses).
 * - userfaultfd: lets a process stall the kernel mid-copy, the standard tool of race exploits.
 *
 * 32-bit (i386) calls on x86_64 get the same answers by their own numbers; x32 calls (numbers
 * from 2^30 up) and unknown architectures get EPERM for everything.
 */

const ld = 0x20 // BPF_LD | BPF_W | BPF_ABS
const jeq = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
const jge = 0x35 // BPF_JMP | BPF_JGE | BPF_K
const ret = 0x06 // BPF_RET | BPF_K
const allow = 0x7fff0000
const eperm = 0x00050000 | 1

interface Abi {
  readonly audit: number
  readonly denied: ReadonlyArray<number>
  /** Numbers from here up are another ABI sharing the architecture's audit value (x32). */
  readonly above?: number
}

//                           keyctl add_key request_key bpf perf_event_open userfaultfd
const abis: Record<string, ReadonlyArray<Abi>> = {
  x64: [
    { audit: 0xc000003e, denied: [250, 248, 249, 321, 298, 323], above: 0x40000000 },
    { audit: 0x40000003, denied: [288, 286, 287, 357, 336, 374] }
  ],
  arm64: [
    { audit: 0xc00000b7, denied: [219, 217, 218, 280, 241, 282] },
    { audit: 0x40000028, denied: [311, 309, 310, 386, 364, 388] }
  ]
}

type Instruction = readonly [code: number, jt: number, jf: number, k: number]

/** The program for `arch` (process.arch), as the bytes of `struct sock_filter[]`. */
export const program = (arch: string = process.arch): Uint8Array => {
  const code: Array<Instruction> = []
  for (const abi of abis[arch] ?? []) {
    // Per ABI: arch matches? then its numbers; else on to the next ABI's block.
    const body: Array<Instruction> = [[ld, 0, 0, 0]]
    if (abi.above !== undefined) body.push([jge, 0, 0, abi.above])
    for (const nr of abi.denied) body.push([jeq, 0, 0, nr])
    body.push([ret, 0, 0, allow], [ret, 0, 0, eperm])
    // Jumps: every test that matches goes to the eperm return (the block's last instruction).
    const fixed = body.map(([c, , , k], i): Instruction =>
      c === jeq || c === jge ? [c, body.length - 1 - i - 1, 0, k] : [c, 0, 0, k]
    )
    code.push([ld, 0, 0, 4], [jeq, 0, fixed.length, abi.audit], ...fixed)
  }
  code.push([ret, 0, 0, eperm])
  const bytes = Buffer.alloc(code.length * 8)
  code.forEach(([c, jt, jf, k], i) => {
    bytes.writeUInt16LE(c, i * 8)
    bytes.writeUInt8(jt, i * 8 + 2)
    bytes.writeUInt8(jf, i * 8 + 3)
    bytes.writeUInt32LE(k >>> 0, i * 8 + 4)
  })
  return bytes
}
