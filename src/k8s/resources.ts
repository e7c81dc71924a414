/** The API resources retina-ts reads and writes, and their REST paths. */
import type { V1ObjectMeta } from '@kubernetes/client-node';

export interface ResourceRef {
  readonly group: string; // '' for the core group
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

/** What every object has; metadata dates are RFC 3339 strings on the wire. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: Omit<V1ObjectMeta, 'creationTimestamp' | 'deletionTimestamp' | 'managedFields'> & {
    name: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
  };
}

export interface KubeList<T> {
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

const r = (group: string, version: string, plural: string, kind: string, namespaced: boolean): ResourceRef =>
  Object.freeze({ group, version, plural, kind, namespaced });

export const resources = Object.freeze({
  pods: r('', 'v1', 'pods', 'Pod', true),
  services: r('', 'v1', 'services', 'Service', true),
  nodes: r('', 'v1', 'nodes', 'Node', false),
  namespaces: r('', 'v1', 'namespaces', 'Namespace', false),
  events: r('', 'v1', 'events', 'Event', true),
  secrets: r('', 'v1', 'secrets', 'Secret', true),
  jobs: r('batch', 'v1', 'jobs', 'Job', true),
  leases: r('coordination.k8s.io', 'v1', 'leases', 'Lease', true),
  crds: r('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false),
  retinaEndpoints: r('retina.sh', 'v1alpha1', 'retinaendpoints', 'RetinaEndpoint', true),
  retinaEndpointSlices: r('retina.sh', 'v1alpha1', 'retinaendpointslices', 'RetinaEndpointSlice', true),
  metricsConfigurations: r('retina.sh', 'v1alpha1', 'metricsconfigurations', 'MetricsConfiguration', false),
  captures: r('retina.sh', 'v1alpha1', 'captures', 'Capture', true),
  containerNetworkLogs: r('acn.azure.com', 'v1alpha1', 'containernetworklogs', 'ContainerNetworkLog', false),
  endpointSlices: r('discovery.k8s.io', 'v1', 'endpointslices', 'EndpointSlice', true),
  networkPolicies: r('networking.k8s.io', 'v1', 'networkpolicies', 'NetworkPolicy', true),
});

/** The chart's agent pods and DaemonSets (charts/retina/templates/agent-*.yaml: retina.labels + component). */
export const CHART_AGENT_SELECTOR = 'app.kubernetes.io/name=retina,app.kubernetes.io/component=agent';

export function apiVersionOf(res: ResourceRef): string {
  return res.group ? `${res.group}/${res.version}` : res.version;
}

/** /api/v1/namespaces/ns/pods, or the all-namespaces / cluster-scoped collection without ns. */
export function collectionPath(res: ResourceRef, namespace?: string): string {
  const base = res.group ? `/apis/${res.group}/${res.version}` : `/api/${res.version}`;
  return res.namespaced && namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${res.plural}` : `${base}/${res.plural}`;
}

export function objectPath(res: ResourceRef, namespace: string | undefined, name: string, sub?: 'status'): string {
  return `${collectionPath(res, namespace)}/${encodeURIComponent(name)}${sub ? `/${sub}` : ''}`;
}

/**
 * `namespace/name`, or `name` for cluster-scoped objects: the key of stores and work queues. Built
 * with join, which makes one flat string: a template literal makes a cons string that a Map
 * flattens into a second copy when it hashes it, and a store of 20 000 objects keeps both (about
 * 40 bytes more per key).
 */
export function keyOf(o: { metadata: { name: string; namespace?: string | undefined } }): string {
  return o.metadata.namespace ? [o.metadata.namespace, o.metadata.name].join('/') : o.metadata.name;
}

export function splitKey(key: string): { namespace: string | undefined; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
