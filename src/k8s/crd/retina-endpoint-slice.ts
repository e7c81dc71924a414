/** RetinaEndpointSlice (retina.sh/v1alpha1), as charts/retina/crds/retina.sh_retinaendpointslices.yaml defines it. */
import type { KubeObject } from '../resources.js';

/** One Pod of the slice's namespace: what an agent enriches with. */
export interface RetinaEndpointSliceEntry {
  name: string;
  /** Primary first. */
  podIPs: string[];
  nodeIP?: string;
  ownerReferences?: { kind: string; name: string }[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface RetinaEndpointSlice extends KubeObject {
  endpoints: RetinaEndpointSliceEntry[];
}

/** Every entry field, checked against the chart's CRD schema by crd.test.ts. */
export const RETINA_ENDPOINT_SLICE_ENTRY_FIELDS = ['name', 'podIPs', 'nodeIP', 'ownerReferences', 'labels', 'annotations'] as const satisfies readonly (keyof RetinaEndpointSliceEntry)[];
