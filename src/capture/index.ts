/** Packet capture: the Capture spec model, the Job translator and target resolution (operator and CLI share them). */
export * from './spec.js';
export * from './trigger.js';
export * from './job.js';
export * from './targets.js';
// The workload's side (retina-capture): its env contract, the run, the providers' contract, file names.
export { CaptureEnvError, decodeWorkloadEnv, type WorkloadEnv } from './env.js';
export { runWorkload, type WorkloadDeps, type WorkloadResult } from './workload.js';
export { hubbleTrigger, flowMatchesTrigger, triggerFlowOf, triggerPoint, type TriggerFlow, type TriggerSource } from './trigger-hubble.js';
export { TriggeredPcap, MATCH_WINDOW_MS, PcapStreamError, type RingOptions, type TriggerCut, type TriggerPoint } from './ring.js';
export { addressBytes, packetMatches, LINKTYPE, type PacketTuple } from './pcap-header.js';
export { RING_MAX_BYTES, TRIGGER_SLACK_MS, type ManifestTrigger } from './triggered.js';
export { CaptureError, type CaptureCounts, type CaptureProvider, type RunningCapture, type StartOptions } from './provider.js';
export { BLOB_CAPTURE_METADATA, S3_CAPTURE_METADATA, allCapturesBundleName, isNodeTarball, tarballFromAnnotation } from './naming.js';
