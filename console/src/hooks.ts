/** Data for a view: loaded, reloaded on a timer while shown (live state), and the error in words. */
import { useCallback, useEffect, useRef, useState } from "preact/hooks"
import { describe } from "./api.js"

export interface Loaded<A> {
  readonly data: A | undefined
  readonly error: string | undefined
  readonly reload: () => Promise<void>
}

export const useLoad = <A>(load: () => Promise<A>, keys: ReadonlyArray<unknown>, everyMs?: number): Loaded<A> => {
  const [data, setData] = useState<A | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const current = useRef(load)
  current.current = load
  const reload = useCallback(async () => {
    try {
      setData(await current.current())
      setError(undefined)
    } catch (failure) {
      setError(describe(failure))
    }
  }, [])
  useEffect(() => {
    setData(undefined)
    void reload()
    if (everyMs === undefined) return
    // Polls only while the tab is seen: a hidden console costs svc nothing.
    const timer = setInterval(() => document.visibilityState === "visible" && void reload(), everyMs)
    return () => clearInterval(timer)
  }, keys)
  return { data, error, reload }
}

/** A control's action: runs once at a time, its failure shown in words. */
export const useAction = () => {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)
  const run = async (action: () => Promise<unknown>) => {
    setBusy(true)
    setError(undefined)
    try {
      await action()
    } catch (failure) {
      setError(describe(failure))
    } finally {
      setBusy(false)
    }
  }
  return { busy, error, run, setError }
}
