/**
 * kubectl-retina's capture client: creating, listing and deleting captures in the cluster, and
 * downloading their files (from the nodes, Azure Blob or S3) with each tarball verified. It talks to
 * the API server through src/k8s's one client (requests and pods/exec alike); the words it prints
 * and the exit codes are src/cli/capture's.
 */
export {
  createCaptureJobs, createCaptureResource, createCaptureSecrets, waitForCaptureResource, waitForJobs,
  type CaptureRequest, type JobsEvents, type JobsRequest, type JobsResult, type WaitOptions,
} from './create.js';
export { deleteCapture, listCaptures, type CaptureProgress, type CaptureSummary, type DeleteOutcome } from './jobs.js';
export { type CaptureImages, type ImageChoice } from './images.js';
export { downloadCaptures, type DownloadOutcome, type DownloadReport, type DownloadRequest } from './download.js';
export { DEFAULT_DOWNLOAD_IMAGE } from './helper-pod.js';
export { redactSas, type S3Source } from './remote.js';
export { DownloadError, type TransferProgress, type TransferReporter } from './transfer.js';
export { ChecksumError, type VerifyResult } from './verify.js';
