/**
 * The outbox transport: each message becomes `<dir>/<ISO time>-<uuid>.json` holding
 * `{to, from, subject, text, html, headers}` (extensions.md §1). Written to a temporary name and
 * renamed, so a reader never sees half a message.
 */
import { Effect } from "effect"
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"
import { uuidv7 } from "../domain/Ids.js"
import { makeFolders } from "../Folders.js"
import { MailSendFailed, type Transport } from "./Transport.js"

export const outboxTransport = (dir: string) =>
  Effect.try({
    try: () => makeFolders(dir),
    catch: (cause) => new MailSendFailed({ cause })
  }).pipe(
    Effect.orDie,
    Effect.as<Transport>((envelope) =>
      Effect.tryPromise({
        try: async () => {
          const id = uuidv7()
          const name = `${new Date(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toISOString()}-${id}.json`
          const body = JSON.stringify(
            {
              to: envelope.to,
              from: envelope.from,
              subject: envelope.subject,
              text: envelope.text,
              html: envelope.html ?? null,
              headers: envelope.headers ?? {}
            },
            null,
            2
          )
          const temporary = NodePath.join(dir, `.${name}.tmp`)
          await NodeFs.writeFile(temporary, body + "\n", { mode: 0o600 })
          await NodeFs.rename(temporary, NodePath.join(dir, name))
        },
        catch: (cause) => new MailSendFailed({ cause })
      })
    )
  )
