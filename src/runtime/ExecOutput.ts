/**
 * Collecting an exec's output: each stream keeps its first 1 MiB (more sets `truncated`), and the
 * whole output is also persisted as `output` events as it comes, so a reader of the events sees
 * it live and a restart can rebuild the result of an exec whose first attempt was cut off.
 */
export const outputCapBytes = 1024 * 1024

export class OutputCollector {
  private readonly parts = { stdout: [] as Array<Buffer>, stderr: [] as Array<Buffer> }
  private readonly sizes = { stdout: 0, stderr: 0 }
  truncated = false

  add(stream: "stdout" | "stderr", chunk: Uint8Array) {
    const room = outputCapBytes - this.sizes[stream]
    if (chunk.byteLength > room) this.truncated = true
    if (room <= 0) return
    const kept = Buffer.from(chunk.buffer, chunk.byteOffset, Math.min(room, chunk.byteLength))
    this.parts[stream].push(Buffer.from(kept))
    this.sizes[stream] += kept.byteLength
  }

  base64(stream: "stdout" | "stderr") {
    return Buffer.concat(this.parts[stream]).toString("base64")
  }
}
