/**
 * The light and dark themes: by default the system's (`prefers-color-scheme`); a choice made with
 * the header's "Theme" field is remembered in this browser (localStorage) and set as
 * `<html data-theme>`, which style.css reads before the system's preference.
 */
import { useState } from "preact/hooks"

type Choice = "system" | "light" | "dark"

const key = "svc-theme"

const stored = (): Choice => {
  try {
    const value = localStorage.getItem(key)
    return value === "light" || value === "dark" ? value : "system"
  } catch {
    return "system" // storage refused (a private window's policy): follow the system
  }
}

const apply = (choice: Choice) => {
  if (choice === "system") delete document.documentElement.dataset.theme
  else document.documentElement.dataset.theme = choice
}

/** The theme shown now: the chosen one, else the system's. */
export const isDark = () => {
  const chosen = document.documentElement.dataset.theme
  return chosen === undefined ? matchMedia("(prefers-color-scheme: dark)").matches : chosen === "dark"
}

/** Sets the remembered theme before the first render, so the page is drawn once in its colours. */
export const applyStoredTheme = () => apply(stored())

export const ThemeSwitch = () => {
  const [choice, setChoice] = useState(stored)
  const choose = (next: Choice) => {
    setChoice(next)
    apply(next)
    try {
      if (next === "system") localStorage.removeItem(key)
      else localStorage.setItem(key, next)
    } catch {
      // not remembered; the choice still holds for this page
    }
  }
  return (
    <select
      class="theme"
      aria-label="Theme"
      value={choice}
      onChange={(event) => choose((event.currentTarget as HTMLSelectElement).value as Choice)}
    >
      <option value="system">System theme</option>
      <option value="light">Light theme</option>
      <option value="dark">Dark theme</option>
    </select>
  )
}
