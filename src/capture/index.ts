/** Packet capture: the Capture spec model, the Job translator and target resolution (operator and CLI share them). */
export * from './spec.js';
export * from './job.js';
export * from './targets.js';
// The workload's side (retina-capture): its env contract, the run, the providers' contract, file names.
export { CaptureEnvError, decodeWorkloadEnv, type WorkloadEnv } from './env.js';
export { runWorkload, type WorkloadDeps, type WorkloadResult } from './workload.js';
export { CaptureError, type CaptureCounts, type CaptureProvider, type RunningCapture, type StartOptions } from './provider.js';
export { BLOB_CAPTURE_METADATA, S3_CAPTURE_METADATA, allCapturesBundleName, isNodeTarball, tarballFromAnnotation } from './naming.js';
