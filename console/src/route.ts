/**
 * The console's place lives in the URL's hash (`#/o/<organization>/machines/<id>`), so every view
 * can be linked and reloaded, and svc serves one document for all of them.
 */
import { useEffect, useState } from "preact/hooks"

export interface Route {
  readonly organization: string | undefined
  /** The view's path inside the organization: `["machines", id, "terminal"]`. */
  readonly path: ReadonlyArray<string>
}

export const parse = (hash: string): Route => {
  const parts = hash.replace(/^#\/?/, "").split("/").filter((part) => part !== "").map(decodeURIComponent)
  return parts[0] === "o" ? { organization: parts[1], path: parts.slice(2) } : { organization: undefined, path: parts }
}

export const href = (organization: string, ...path: ReadonlyArray<string>) =>
  `#/o/${[organization, ...path].map(encodeURIComponent).join("/")}`

export const go = (organization: string, ...path: ReadonlyArray<string>) =>
  void (location.hash = href(organization, ...path))

export const useRoute = () => {
  const [route, setRoute] = useState(() => parse(location.hash))
  useEffect(() => {
    const changed = () => setRoute(parse(location.hash))
    addEventListener("hashchange", changed)
    return () => removeEventListener("hashchange", changed)
  }, [])
  return route
}
