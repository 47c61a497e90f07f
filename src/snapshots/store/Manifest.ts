/**
 * A snapshot's manifest: every entry of the machine's disk with its metadata and, for files, the
 * chunks (SHA-256, hex) that make up its bytes in order. It names the manifest it was taken
 * against (`parent`), whose unchanged files it reused without reading them again. Its digest, the
 * SHA-256 of its text, is the snapshot's `manifest` field.
 */
import * as NodeCrypto from "node:crypto"
import type { SnapshotPatch } from "./SnapshotsRepo.js"
import type { FileIdentity, TreeEntry } from "./Tree.js"

export type Tier = "warm" | "cold"

export interface ManifestEntry extends TreeEntry {
  readonly chunks?: ReadonlyArray<string> | undefined
  /** Files only: what says the file did not change since (inode and change time on the source disk). */
  readonly identity?: FileIdentity | undefined
}

export interface Manifest {
  readonly format: 1
  readonly snapshot_id: string
  readonly machine_id: string
  /** Whose chunks these are (the organization's id); absent in manifests written before chunks were scoped. */
  readonly chunk_scope?: string | undefined
  readonly tier: Tier
  readonly chunk_size: number
  /** 1 for a snapshot taken against no parent, else the parent's generation + 1. */
  readonly generation: number
  readonly parent_snapshot_id: string | null
  readonly parent: string | null
  readonly created_at: number
  readonly disk_synced: boolean
  readonly size_bytes: number
  readonly uploaded_bytes: number
  readonly entries: ReadonlyArray<ManifestEntry>
}

export interface Summary {
  readonly manifest: string
  readonly parent_manifest: string | null
  readonly generation: number
  readonly size_bytes: number
  readonly uploaded_bytes: number
  readonly disk_synced: boolean
}

export const digestOf = (text: string) => `sha256:${NodeCrypto.createHash("sha256").update(text).digest("hex")}`

export const summaryOf = (manifest: Manifest, text: string): Summary => ({
  manifest: digestOf(text),
  parent_manifest: manifest.parent,
  generation: manifest.generation,
  size_bytes: manifest.size_bytes,
  uploaded_bytes: manifest.uploaded_bytes,
  disk_synced: manifest.disk_synced
})

/** The row of a snapshot whose manifest is stored: ready, with the manifest's figures. */
export const readyPatch = (summary: Summary, completedAt: number): SnapshotPatch => ({
  status: "ready",
  ...summary,
  disk_synced: summary.disk_synced ? 1 : 0,
  completed_at: completedAt
})
