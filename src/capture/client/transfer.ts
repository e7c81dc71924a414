/** What the downloads from nodes and from object storage share: their error, and how a transfer reports its bytes. */

/** A download that failed for a reason the message names (RBAC, a node gone, a cut transfer, bad credentials). */
export class DownloadError extends Error {
  override readonly name = 'DownloadError';
}

/** One transfer's progress as its bytes arrive (kubectl-retina draws a progress bar from it). */
export interface TransferProgress {
  add(bytes: number): void;
  /** The stream ended (before the size check). */
  finish(): void;
}

/** Starts the report of one transfer: what it is (the file, and its node) and its size when known. */
export type TransferReporter = (label: string, totalBytes: number | undefined) => TransferProgress;
