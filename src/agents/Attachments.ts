/**
 * A prompt's attachments: written into the machine under `.svc/attachments/<turn id>/` (from the
 * agent's working folder, the machine's home) and listed at the end of the prompt's text.
 */
import { Effect } from "effect"
import { guestArgv } from "../drivers/Guest.js"
import type { MachineDriverShape } from "../drivers/MachineDriver.js"

export const attachmentsFolder = ".svc/attachments"

export interface Attachment {
  readonly name: string
  readonly data_base64: string
}

/** The attachments' decoded size, estimated from their base64 length (what the 16 MiB limit counts). */
export const attachmentBytes = (attachments: ReadonlyArray<Attachment>) =>
  attachments.reduce((sum, attachment) => sum + Math.floor(attachment.data_base64.length * 3 / 4), 0)

/** Writes one file into the machine (relative paths are from its home). */
export const writeInto = (driver: MachineDriverShape, machineId: string, path: string, data: Uint8Array) =>
  driver.exec(machineId, {
    argv: guestArgv("write-file", path),
    stdin: data
  }, () => Effect.void)

/**
 * Writes the turn's attachments; answers their paths, or the name of the first one that could not
 * be written.
 */
export const writeAttachments = (
  driver: MachineDriverShape,
  machineId: string,
  turnId: string,
  attachments: ReadonlyArray<Attachment>
) =>
  Effect.gen(function*() {
    const files: Array<string> = []
    for (const attachment of attachments) {
      const path = `${attachmentsFolder}/${turnId}/${attachment.name}`
      const written = yield* Effect.either(
        writeInto(driver, machineId, path, Buffer.from(attachment.data_base64, "base64"))
      )
      if (written._tag === "Left" || written.right.exitCode !== 0) {
        return { _tag: "failed" as const, name: attachment.name }
      }
      files.push(path)
    }
    return { _tag: "written" as const, files }
  })

/** The prompt's text as the agent gets it: the attached files named after it. */
export const promptText = (text: string, files: ReadonlyArray<string>) =>
  files.length === 0
    ? text
    : `${text}\n\nAttached files (paths from the working folder):\n${files.map((f) => `- ${f}`).join("\n")}`
