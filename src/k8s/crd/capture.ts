/** Capture (retina.sh/v1alpha1), as the chart's CRD defines it (the capture controller uses it). */
import type { KubeObject } from '../resources.js';

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

/**
 * Ours: a triggered capture arms on its nodes and writes packets only once a flow of the node's agent
 * matches (docs/capture.md#triggered-captures): the pre-trigger window before it, the trigger packet,
 * and postTriggerDuration after it.
 */
export interface CaptureTrigger {
  /** A drop reason as the agent names it (`NETFILTER_DROP`; Retina's names with dropReasonNames: retina). */
  dropReason?: string;
  /** `namespace/name` (a pod name prefix, as Hubble's --pod): a flow from or to that pod. */
  pod?: string;
  /** Every field given must match (Hubble's FlowFilter fields of the same meaning). */
  flowFilter?: {
    verdict?: 'DROPPED' | 'FORWARDED'; sourceIP?: string; destinationIP?: string; sourcePod?: string; destinationPod?: string;
    protocol?: 'TCP' | 'UDP' | 'ICMPv4' | 'ICMPv6'; sourcePort?: number; destinationPort?: number;
  };
  /** The window kept before the trigger: the last `packets` packets, or those of the last `duration` (default packets: 100). */
  preTrigger?: { packets?: number; duration?: string };
  /** How long packets are written after the trigger (default 10s). */
  postTriggerDuration?: string;
  /** The node's agent's Hubble server (default 127.0.0.1:4244; `unix:///path` for its socket). */
  hubbleAddress?: string;
}

export interface CaptureSpec {
  captureConfiguration: {
    trigger?: CaptureTrigger;
    captureTarget: { nodeSelector?: LabelSelector; namespaceSelector?: LabelSelector; podSelector?: LabelSelector; podNames?: string[] };
    filters?: { include?: string[]; exclude?: string[] };
    tcpdumpFilter?: string;
    includeMetadata?: boolean;
    captureOption?: {
      duration?: string; packetSize?: number; maxCaptureSize?: number; fileCount?: number; interfaces?: string[];
      pcapFilter?: string; sourceIPs?: string[]; destinationIPs?: string[]; noPromiscuous?: boolean; packetBuffered?: boolean;
      immediateMode?: boolean; noResolveDNS?: boolean; noResolvePort?: boolean; verbosity?: '' | 'verbose' | 'extra' | 'max';
      printDataFormat?: '' | 'hex' | 'hex-with-link' | 'ascii' | 'ascii-with-link'; printLinkHeader?: boolean; quietOutput?: boolean;
      absoluteSeq?: boolean; timestampFormat?: '' | 'none' | 'unformatted' | 'delta' | 'date' | 'delta-since-first'; dontVerifyChecksum?: boolean;
    };
  };
  outputConfiguration: {
    hostPath?: string; persistentVolumeClaim?: string; blobUpload?: string;
    s3Upload?: { endpoint?: string; bucket: string; secretName?: string; region?: string; path?: string };
  };
  cleanUpAfterUpload?: boolean;
}

export interface CaptureCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

export type CaptureNodeState = 'Pending' | 'Running' | 'Completed' | 'Failed';

export interface CaptureStatus {
  active?: number; succeeded?: number; failed?: number; startTime?: string; completionTime?: string; conditions?: CaptureCondition[];
  /** Ours: target nodes by the state of their Job's pod; `uploaded` counts those whose tarball is written. */
  nodeCounts?: { pending: number; running: number; completed: number; failed: number; uploaded: number };
  /** Ours: one entry per target node. */
  nodes?: { name: string; job?: string; state: CaptureNodeState; file?: string; message?: string }[];
}

export interface Capture extends KubeObject {
  spec: CaptureSpec;
  status?: CaptureStatus;
}

/** Top-level spec and status fields, checked against the chart's CRD schema by crd.test.ts. */
export const CAPTURE_FIELDS = {
  spec: ['captureConfiguration', 'outputConfiguration', 'cleanUpAfterUpload'],
  status: ['active', 'succeeded', 'failed', 'startTime', 'completionTime', 'conditions', 'nodeCounts', 'nodes'],
} as const satisfies { spec: readonly (keyof CaptureSpec)[]; status: readonly (keyof NonNullable<Capture['status']>)[] };
