/** Reads an outbox folder back: what tests and `svc` operators use to see sent mail. */
import { Effect } from "effect"
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"

export interface OutboxMessage {
  readonly file: string
  readonly to: string
  readonly from: string
  readonly subject: string
  readonly text: string
  readonly html: string | null
  readonly headers: Readonly<Record<string, string>>
}

/** Every message in `dir`, oldest first (file names start with the ISO time). */
export const readOutbox = (dir: string) =>
  Effect.promise(async (): Promise<ReadonlyArray<OutboxMessage>> => {
    const names = await NodeFs.readdir(dir).catch(() => [] as Array<string>)
    const files = names.filter((name) => name.endsWith(".json") && !name.startsWith(".")).sort()
    return Promise.all(files.map(async (name) => {
      const file = NodePath.join(dir, name)
      return { file, ...JSON.parse(await NodeFs.readFile(file, "utf8")) } as OutboxMessage
    }))
  })
