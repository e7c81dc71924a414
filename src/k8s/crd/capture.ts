/** Capture (retina.sh/v1alpha1), as the chart's CRD defines it (the capture controller uses it). */
import type { KubeObject } from '../resources.js';

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

export interface CaptureSpec {
  captureConfiguration: {
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
