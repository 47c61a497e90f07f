/**
 * An alert e-mail: one per member, type and machine (or organization, for billing's), telling of every alert it coalesces, with the
 * one-click unsubscribe headers of RFC 8058 and the same link in the text.
 */
import type { MailMessage } from "../kernel/mail/Mail.js"
import type { AlertRow } from "./Repo.js"
import { alertSpecs, type AlertType } from "./Types.js"

const subjects: Record<AlertType, string> = {
  operation_failed: "An operation failed",
  machine_stop_failed: "A machine could not be stopped",
  auto_stop: "A machine was stopped by its timer",
  abuse_stop: "A machine was stopped by the abuse guard",
  billing_exhausted: "Your balance ran out",
  trial_ending: "Your trial ends in 3 days"
}

export const unsubscribeUrl = (baseUrl: string, token: string) =>
  `${baseUrl.replace(/\/$/, "")}/v1/notifications/unsubscribe?token=${encodeURIComponent(token)}`

export const alertMail = (
  to: string,
  type: AlertType,
  alerts: ReadonlyArray<AlertRow>,
  unsubscribe: string
): MailMessage => {
  const more = alerts.length > 1 ? ` (${alerts.length} times)` : ""
  const lines = alerts.map((alert) => `- ${new Date(alert.created_at).toISOString()}: ${alert.summary}`)
  return {
    to,
    subject: `[svc] ${subjects[type]}${more}`,
    text: [
      `${alertSpecs[type].description}`,
      "",
      ...lines,
      "",
      // Billing's alerts are the organization's, not a machine's (machine_id "").
      alerts[0]?.machine_id === ""
        ? "You get at most one such e-mail every 10 minutes."
        : "You get at most one such e-mail per machine every 10 minutes.",
      `To stop these e-mails (${type}), open: ${unsubscribe}`
    ].join("\n"),
    headers: {
      "List-Unsubscribe": `<${unsubscribe}>`,
      "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"
    }
  }
}
