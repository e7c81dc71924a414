/**
 * kubectl-retina's capture client: creating, listing and deleting captures in the cluster, and
 * downloading their files (from the nodes, Azure Blob or S3) with each tarball verified. It talks to
 * the API server through src/k8s's one client (requests and pods/exec alike). It tells what happens
 * (results, reports, errors that name the problem); printing it and the exit codes are src/cli/capture's.
 */
export {
  createCaptureJobs, createCaptureResource, waitForCaptureResource, waitForJobs,
  type CaptureRequest, type JobsEvents, type JobsRequest, type JobsResult, type WaitOptions,
} from './create.js';
export { deleteCapture, listCaptures, type CaptureProgress, type CaptureSummary, type DeleteOutcome } from './jobs.js';
export type { CaptureImages, ImageChoice } from './images.js';
export { downloadCaptures, type DownloadOutcome, type DownloadReport, type DownloadRequest } from './download.js';
export { DEFAULT_DOWNLOAD_IMAGE } from './helper-pod.js';
export type { S3Source } from './remote.js';
export { DownloadError, type TransferProgress, type TransferReporter } from './transfer.js';
export { ChecksumError, type VerifyResult } from './verify.js';
