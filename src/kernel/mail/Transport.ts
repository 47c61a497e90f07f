/** What a mail transport delivers and how it fails: shared by the Mail service and its transports. */
import { Data, type Effect } from "effect"

export interface MailMessage {
  readonly to: string
  readonly subject: string
  readonly text: string
  readonly html?: string
  readonly headers?: Readonly<Record<string, string>>
}

/** A message with its sender, as a transport delivers it. */
export interface Envelope extends MailMessage {
  readonly from: string
}

export class MailSendFailed extends Data.TaggedError("MailSendFailed")<{ readonly cause: unknown }> {}

export type Transport = (envelope: Envelope) => Effect.Effect<void, MailSendFailed>
