/** RetinaEndpoint (retina.sh/v1alpha1), as charts/retina/crds/retina.sh_retinaendpoints.yaml defines it. */
import type { KubeObject } from '../resources.js';

export interface RetinaEndpointOwner {
  apiVersion?: string;
  kind: string;
  name: string;
}

export interface RetinaEndpointSpec {
  podIP: string;
  podIPs?: string[];
  nodeIP?: string;
  containers?: { name: string; id?: string }[];
  ownerReferences?: RetinaEndpointOwner[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface RetinaEndpoint extends KubeObject {
  spec: RetinaEndpointSpec;
  status?: Record<string, never>;
}

/** Every spec field, checked against the chart's CRD schema by crd.test.ts. */
export const RETINA_ENDPOINT_SPEC_FIELDS = ['podIP', 'podIPs', 'nodeIP', 'containers', 'ownerReferences', 'labels', 'annotations'] as const satisfies readonly (keyof RetinaEndpointSpec)[];
