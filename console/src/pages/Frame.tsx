/**
 * What the pages outside an organization share (sign-in, device, invitation, account): a narrow
 * frame with the signed-in address, a status line, and refusals in words.
 */
import type { ComponentChildren } from "preact"
import { describe, Problem, uiUrl } from "../api.js"
import { ThemeSwitch } from "../theme.js"

export const Frame = (
  { signedInAs, children }: { readonly signedInAs: string | null; readonly children: ComponentChildren }
) => (
  <>
    <header class="top">
      <a class="brand" href={`${uiUrl}/`}>svc</a>
      <span class="who">{signedInAs ?? ""}</span>
      <ThemeSwitch />
    </header>
    <main id="main" class="narrow">{children}</main>
  </>
)

export interface Said {
  readonly text: string
  readonly kind: "ok" | "error" | ""
}

/** An aria-live status line: what a button did, or why not. */
export const Status = (
  { id, said, focusable }: { readonly id: string; readonly said: Said | undefined; readonly focusable?: boolean }
) => (
  <p
    id={id}
    class={`status ${said?.kind ?? ""}`}
    role="status"
    aria-live="polite"
    tabIndex={focusable ? -1 : undefined}
  >
    {said?.text ?? ""}
  </p>
)

/** A refusal in words: too many attempts said plainly, anything else with its problem's code. */
export const refusal = (error: unknown): Said => ({
  text: error instanceof Problem && error.status === 429
    ? "Too many attempts. Wait a moment and try again."
    : describe(error),
  kind: "error"
})

/** The status of a refusal, when it is one. */
export const statusOf = (error: unknown) => error instanceof Problem ? error.status : 0
