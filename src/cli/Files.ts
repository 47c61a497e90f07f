/**
 * `svc files put|get`: copies a file into or out of a running machine a chunk at a time (one write
 * or read operation per chunk, each waited for), so a file of any size passes through a bounded
 * amount of memory: the chunk, its base64 and the request. A chunk the server finds too large (413
 * `body_too_large`, its body limit is its own setting) is sent again in halves, and later chunks
 * are read at the smaller size.
 */
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import * as NodeFs from "node:fs"
import type { Client } from "../client/Client.js"
import { CommandFailed, UsageError } from "./Failure.js"
import { machineArg, withMachine } from "./Machines.js"
import { bytes, stderr } from "./Output.js"
import { interactive, waitWithProgress } from "./Progress.js"

const defaultChunk = 4 * 1024 * 1024
/** The API's own limit for one write or one range. */
const maxChunk = 16 * 1024 * 1024
const minChunk = 64 * 1024

const chunkSize = Options.integer("chunk-size").pipe(
  Options.withDefault(defaultChunk),
  Options.withDescription("Bytes per operation (64 KiB to 16 MiB; default 4 MiB)")
)

const checkChunk = (size: number) =>
  size >= minChunk && size <= maxChunk
    ? Effect.succeed(size)
    : Effect.fail(new UsageError({ message: `--chunk-size must be between ${minChunk} and ${maxChunk}` }))

/** `put 12.0 MiB of 20.0 MiB` on a terminal, updated in place; nothing otherwise. */
const progress = (verb: string, total?: number) => (done: number) =>
  interactive()
    ? stderr(`\r\x1b[K${verb} ${bytes(done)}${total === undefined ? "" : ` of ${bytes(total)}`}`)
    : Effect.void
const endProgress = interactive() ? stderr("\r\x1b[K") : Effect.void

/** Fills `buffer` from `read` as far as the source goes; answers how many bytes were read. */
const fill = async (read: (buffer: Buffer, offset: number) => Promise<number>, buffer: Buffer) => {
  let filled = 0
  while (filled < buffer.length) {
    const count = await read(buffer, filled)
    if (count === 0) break
    filled += count
  }
  return filled
}

/** A reader of a local file, or of stdin for `-`: `read(buffer, offset)` answers the bytes read, 0 at the end. */
const openSource = (local: string) => {
  if (local === "-") {
    const iterator = process.stdin[Symbol.asyncIterator]()
    let pending: Buffer = Buffer.alloc(0)
    return {
      size: undefined,
      read: async (buffer: Buffer, offset: number) => {
        if (pending.length === 0) {
          const next = await iterator.next()
          if (next.done === true) return 0
          pending = next.value as Buffer
        }
        const count = pending.copy(buffer, offset)
        pending = pending.subarray(count)
        return count
      },
      close: () => undefined
    }
  }
  const fd = NodeFs.openSync(local, "r")
  return {
    size: NodeFs.fstatSync(fd).size,
    read: (buffer: Buffer, offset: number) =>
      new Promise<number>((resolve, reject) =>
        NodeFs.read(
          fd,
          buffer,
          offset,
          buffer.length - offset,
          null,
          (error, count) => error === null ? resolve(count) : reject(error)
        )
      ),
    close: () => NodeFs.closeSync(fd)
  }
}

/** One write operation, waited for; a 413 sends it again in two halves. Answers the chunk size to go on with. */
const writeChunk = (
  client: Client,
  id: string,
  path: string,
  data: Buffer,
  first: { readonly value: boolean; readonly mode: Option.Option<string> }
): Effect.Effect<number, unknown> =>
  client.machines.writeFile({
    path: { id },
    payload: {
      path,
      data_base64: data.toString("base64"),
      ...(first.value ? Option.match(first.mode, { onNone: () => ({}), onSome: (mode) => ({ mode }) }) : {}),
      ...(first.value ? {} : { append: true })
    }
  }).pipe(
    Effect.flatMap((accepted) => waitWithProgress(client, accepted.operation_id, { quiet: true })),
    Effect.as(data.length),
    Effect.catchIf(
      (error) => (error as { _tag?: string })._tag === "body_too_large" && data.length > minChunk,
      () => {
        const half = Math.ceil(data.length / 2)
        return Effect.zipRight(
          writeChunk(client, id, path, data.subarray(0, half), first),
          writeChunk(client, id, path, data.subarray(half), { ...first, value: false })
        ).pipe(Effect.as(half))
      }
    )
  )

const put = Command.make("put", {
  machine: machineArg,
  local: Args.text({ name: "local" }).pipe(Args.withDescription("A local file, or - for standard input")),
  remote: Args.text({ name: "remote" }).pipe(Args.withDescription("An absolute path in the machine")),
  mode: Options.text("mode").pipe(Options.optional, Options.withDescription("Octal mode such as 644")),
  chunkSize
}, (flags) =>
  Effect.gen(function*() {
    let size = yield* checkChunk(flags.chunkSize)
    if (flags.local !== "-" && !NodeFs.existsSync(flags.local)) {
      return yield* new UsageError({ message: `${flags.local}: no such file` })
    }
    const { client, id } = yield* withMachine(flags.machine)
    const source = openSource(flags.local)
    yield* Effect.addFinalizer(() => Effect.sync(source.close))
    const show = progress("put", source.size)
    let buffer = Buffer.allocUnsafe(size)
    let sent = 0
    let first = true
    while (true) {
      const count = yield* Effect.promise(() => fill(source.read, buffer))
      // The first write creates (or empties) the file even when there is nothing to write.
      if (count === 0 && !first) break
      const next = yield* writeChunk(client, id, flags.remote, buffer.subarray(0, count), {
        value: first,
        mode: flags.mode
      })
      first = false
      sent += count
      yield* show(sent)
      if (count < buffer.length) break
      if (next < size) buffer = Buffer.allocUnsafe(size = next)
    }
    yield* endProgress
  }).pipe(Effect.scoped)).pipe(Command.withDescription("Copy a local file (or standard input) into a running machine"))

const get = Command.make("get", {
  machine: machineArg,
  remote: Args.text({ name: "remote" }).pipe(Args.withDescription("An absolute path in the machine")),
  local: Args.text({ name: "local" }).pipe(
    Args.withDefault("-"),
    Args.withDescription("Where to write it; - or left out for standard output")
  ),
  chunkSize
}, (flags) =>
  Effect.gen(function*() {
    const size = yield* checkChunk(flags.chunkSize)
    const { client, id } = yield* withMachine(flags.machine)
    // A file is written beside its destination and renamed once complete, so a failure leaves no half file.
    const partial = `${flags.local}.svc-part`
    const fd = flags.local === "-" ? 1 : NodeFs.openSync(partial, "w", 0o644)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        if (fd === 1) return
        NodeFs.closeSync(fd)
        NodeFs.rmSync(partial, { force: true })
      })
    )
    const show = progress("get")
    let offset = 0
    while (true) {
      const accepted = yield* client.machines.readFile({
        path: { id },
        payload: { ranges: [{ path: flags.remote, offset, size }] }
      })
      const done = yield* waitWithProgress(client, accepted.operation_id, { quiet: true })
      const range = done.file_ranges?.[0]
      if (range === undefined || range.missing) {
        return yield* new CommandFailed({ message: `${flags.remote}: no such file in the machine` })
      }
      const data = Buffer.from(range.data_base64, "base64")
      yield* Effect.promise(() => writeAll(fd, data))
      offset += data.length
      yield* show(offset)
      if (data.length < size) break
    }
    if (fd !== 1) NodeFs.renameSync(partial, flags.local)
    yield* endProgress
  }).pipe(Effect.scoped)).pipe(Command.withDescription("Copy a file out of a running machine"))

/** Writes all of `data` (stdout may be a pipe that takes it in parts). */
const writeAll = async (fd: number, data: Buffer) => {
  let written = 0
  while (written < data.length) {
    written += await new Promise<number>((resolve, reject) =>
      NodeFs.write(
        fd,
        data,
        written,
        data.length - written,
        null,
        (error, count) =>
          error === null ? resolve(count) : error.code === "EAGAIN" ? setTimeout(() => resolve(0), 5) : reject(error)
      )
    )
  }
}

export const files = Command.make("files").pipe(
  Command.withDescription("Copy files into and out of running machines"),
  Command.withSubcommands([put, get])
)
