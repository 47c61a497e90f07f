/**
 * Making writes durable. Chunks are written without an fsync each (tens of thousands of fsyncs
 * would cost more than the push); one `syncfs(2)` of the file system (coreutils `sync -f`) makes
 * them all durable before the manifest that names them is written, fsynced and renamed into place.
 */
import * as NodeChild from "node:child_process"
import * as NodeFs from "node:fs/promises"
import * as NodePath from "node:path"

/** `syncfs` of the file system holding `path`; false when it could not be done. */
export const syncFileSystem = (path: string) =>
  new Promise<boolean>((resolve) => {
    const child = NodeChild.spawn("sync", ["-f", path], { stdio: "ignore" })
    child.on("error", () => resolve(false))
    child.on("exit", (code) => resolve(code === 0))
  })

/** fsync of a folder, so a rename or a new name in it survives a crash. */
export const syncFolder = async (path: string) => {
  const handle = await NodeFs.open(path, "r")
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/** Writes `data` to `path` atomically and durably: a temporary file in `tmpDir`, fsync, rename, fsync. */
export const writeDurable = async (tmpDir: string, path: string, data: string | Uint8Array) => {
  const temporary = NodePath.join(tmpDir, `${NodePath.basename(path)}.${process.pid}.${Date.now()}.tmp`)
  const handle = await NodeFs.open(temporary, "w", 0o600)
  try {
    await handle.writeFile(data)
    await handle.sync()
  } finally {
    await handle.close()
  }
  await NodeFs.rename(temporary, path)
  await syncFolder(NodePath.dirname(path))
}
