/**
 * ContainerNetworkLog (acn.azure.com/v1alpha1, cluster-scoped): which flows the agents store as flow
 * logs, with the schema AKS's Advanced Container Networking Services documents (the chart's
 * charts/retina/crds/acn.azure.com_containernetworklogs.yaml), and its validation, shared by the
 * operator (status) and the agents (which skip what is invalid): what the operator reports
 * CONFIGURED is exactly what the agents apply.
 *
 * The CRD's schema already bounds sizes and enums; this checks what a schema cannot (IPs and CIDRs,
 * label keys and values, selector operators and their values) and everything again for objects that
 * did not pass an API server (a CRD installed from elsewhere, a unit test). Errors name the field path:
 * `spec.includefilters[1].from.ip[0]: "10.0.0.300" is not an IP or CIDR`.
 */
import { isIP } from 'node:net';
import type { KubeObject } from '../resources.js';
import type { LabelSelector } from './capture.js';

export interface ContainerNetworkLogEndpoint {
  /** `namespace/pod-name-prefix` (`namespace/` = every pod of the namespace). */
  namespacedPod?: string[];
  labelSelector?: LabelSelector;
  /** Single IPs or CIDRs. */
  ip?: string[];
}

export type ContainerNetworkLogProtocol = 'tcp' | 'udp' | 'dns';
export type ContainerNetworkLogVerdict = 'forwarded' | 'dropped';

export interface ContainerNetworkLogFilter {
  name?: string;
  from?: ContainerNetworkLogEndpoint;
  to?: ContainerNetworkLogEndpoint;
  protocol?: ContainerNetworkLogProtocol[];
  verdict?: ContainerNetworkLogVerdict[];
}

export interface ContainerNetworkLogSpec {
  includefilters: ContainerNetworkLogFilter[];
}

/** ACNS's states: CONFIGURED (valid, applied) or FAILED (invalid). */
export type ContainerNetworkLogState = 'CONFIGURED' | 'FAILED';

export interface ContainerNetworkLogCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

export interface ContainerNetworkLogStatus {
  state?: ContainerNetworkLogState;
  timestamp?: string;
  message?: string;
  observedGeneration?: number;
  conditions?: ContainerNetworkLogCondition[];
}

export interface ContainerNetworkLog extends KubeObject {
  spec: ContainerNetworkLogSpec;
  status?: ContainerNetworkLogStatus;
}

/** Spec, filter, endpoint and status fields, checked against the chart's CRD schema by crd.test.ts. */
export const CONTAINER_NETWORK_LOG_FIELDS = {
  spec: ['includefilters'],
  filter: ['name', 'from', 'to', 'protocol', 'verdict'],
  endpoint: ['namespacedPod', 'labelSelector', 'ip'],
  status: ['state', 'timestamp', 'message', 'observedGeneration', 'conditions'],
} as const satisfies {
  spec: readonly (keyof ContainerNetworkLogSpec)[];
  filter: readonly (keyof ContainerNetworkLogFilter)[];
  endpoint: readonly (keyof ContainerNetworkLogEndpoint)[];
  status: readonly (keyof ContainerNetworkLogStatus)[];
};

/** The label key ACNS documents for "the pod's namespace" in an endpoint's labelSelector. */
export const CNL_NAMESPACE_LABEL = 'k8s.io/namespace';

export const CNL_PROTOCOLS: readonly ContainerNetworkLogProtocol[] = ['tcp', 'udp', 'dns'];
export const CNL_VERDICTS: readonly ContainerNetworkLogVerdict[] = ['forwarded', 'dropped'];

/** The same bounds as the CRD's schema. */
const MAX_FILTERS = 64;
const MAX_LIST = 256;
const MAX_SELECTOR = 64;

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const POD_PREFIX = /^[-a-z0-9.]*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

const json = (v: unknown): string => JSON.stringify(v) ?? String(v);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Why `key` is not a Kubernetes label key, or undefined (k8s.io/apimachinery IsQualifiedName). */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash < 0 ? '' : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (slash >= 0 && (prefix === '' || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) return 'its prefix must be a DNS-1123 subdomain of at most 253 characters';
  if (name === '' || name.length > 63 || !QUALIFIED_NAME.test(name)) return "its name must be 1-63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric";
  return undefined;
}

/** Why `value` is not a Kubernetes label value, or undefined. */
export function labelValueProblem(value: string): string | undefined {
  if (value.length > 63 || !LABEL_VALUE.test(value)) return "must be at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric";
  return undefined;
}

/** True for a single IP address (no zone) or a CIDR with a prefix length valid for its family. */
export function isIpOrCidr(s: string): boolean {
  const slash = s.indexOf('/');
  const addr = slash < 0 ? s : s.slice(0, slash);
  if (addr.includes('%')) return false;
  const family = isIP(addr);
  if (family === 0) return false;
  if (slash < 0) return true;
  const bits = s.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

class Problems {
  readonly list: string[] = [];
  add(path: string, what: string): void {
    if (this.list.length < 32) this.list.push(`${path}: ${what}`);
  }
}

function stringList(v: unknown, path: string, p: Problems, each: (s: string, path: string) => void): void {
  if (v === undefined || v === null) return;
  if (!Array.isArray(v)) return p.add(path, 'must be a list of strings');
  if (v.length > MAX_LIST) p.add(path, `has ${v.length} entries; at most ${MAX_LIST}`);
  v.slice(0, MAX_LIST).forEach((s, i) => {
    if (typeof s !== 'string') p.add(`${path}[${i}]`, `${json(s)} is not a string`);
    else each(s, `${path}[${i}]`);
  });
}

function checkSelector(v: unknown, path: string, p: Problems): void {
  if (v === undefined || v === null) return;
  if (!isRecord(v)) return p.add(path, 'must be a label selector (matchLabels, matchExpressions)');
  for (const k of Object.keys(v)) if (k !== 'matchLabels' && k !== 'matchExpressions') p.add(`${path}.${k}`, 'unknown field (want matchLabels or matchExpressions)');
  const ml = v['matchLabels'];
  if (ml !== undefined && ml !== null) {
    if (!isRecord(ml)) p.add(`${path}.matchLabels`, 'must be a map of label keys to values');
    else {
      const keys = Object.keys(ml);
      if (keys.length > MAX_SELECTOR) p.add(`${path}.matchLabels`, `has ${keys.length} labels; at most ${MAX_SELECTOR}`);
      for (const k of keys.slice(0, MAX_SELECTOR)) {
        const kp = labelKeyProblem(k);
        if (kp) p.add(`${path}.matchLabels`, `${json(k)} is not a label key: ${kp}`);
        const val = ml[k];
        if (typeof val !== 'string') p.add(`${path}.matchLabels[${json(k)}]`, `${json(val)} is not a string`);
        else {
          const vp = k === CNL_NAMESPACE_LABEL ? namespaceProblem(val) : labelValueProblem(val);
          if (vp) p.add(`${path}.matchLabels[${json(k)}]`, `${json(val)} ${vp}`);
        }
      }
    }
  }
  const me = v['matchExpressions'];
  if (me === undefined || me === null) return;
  if (!Array.isArray(me)) return p.add(`${path}.matchExpressions`, 'must be a list of {key, operator, values}');
  if (me.length > MAX_SELECTOR) p.add(`${path}.matchExpressions`, `has ${me.length} entries; at most ${MAX_SELECTOR}`);
  me.slice(0, MAX_SELECTOR).forEach((e, i) => {
    const ep = `${path}.matchExpressions[${i}]`;
    if (!isRecord(e)) return p.add(ep, 'must be {key, operator, values}');
    const key = e['key'];
    if (typeof key !== 'string') p.add(`${ep}.key`, 'is required (a label key)');
    else {
      const kp = labelKeyProblem(key);
      if (kp) p.add(`${ep}.key`, `${json(key)} is not a label key: ${kp}`);
    }
    const op = e['operator'];
    const values = e['values'];
    if (op !== 'In' && op !== 'NotIn' && op !== 'Exists' && op !== 'DoesNotExist') {
      return p.add(`${ep}.operator`, `${json(op)} is not one of In, NotIn, Exists, DoesNotExist`);
    }
    const n = Array.isArray(values) ? values.length : values === undefined || values === null ? 0 : -1;
    if (n < 0) return p.add(`${ep}.values`, 'must be a list of strings');
    if ((op === 'In' || op === 'NotIn') && n === 0) p.add(`${ep}.values`, `must not be empty with operator ${op}`);
    if ((op === 'Exists' || op === 'DoesNotExist') && n > 0) p.add(`${ep}.values`, `must be empty with operator ${op}`);
    stringList(values, `${ep}.values`, p, (s, sp) => {
      const vp = key === CNL_NAMESPACE_LABEL ? namespaceProblem(s) : labelValueProblem(s);
      if (vp) p.add(sp, `${json(s)} ${vp}`);
    });
  });
}

function namespaceProblem(ns: string): string | undefined {
  return ns.length <= 63 && DNS1123_LABEL.test(ns) ? undefined : 'is not a namespace name (a DNS-1123 label)';
}

function checkEndpoint(v: unknown, path: string, p: Problems): void {
  if (v === undefined || v === null) return;
  if (!isRecord(v)) return p.add(path, 'must be an endpoint (namespacedPod, labelSelector, ip)');
  for (const k of Object.keys(v)) {
    if (k !== 'namespacedPod' && k !== 'labelSelector' && k !== 'ip') p.add(`${path}.${k}`, 'unknown field (want namespacedPod, labelSelector or ip)');
  }
  stringList(v['namespacedPod'], `${path}.namespacedPod`, p, (s, sp) => {
    const slash = s.indexOf('/');
    if (slash < 0) return p.add(sp, `${json(s)} is not namespace/pod`);
    const ns = s.slice(0, slash);
    const pod = s.slice(slash + 1);
    if (namespaceProblem(ns)) p.add(sp, `${json(s)}: namespace ${json(ns)} is not a namespace name (a DNS-1123 label)`);
    else if (pod.length > 253 || !POD_PREFIX.test(pod)) p.add(sp, `${json(s)}: ${json(pod)} is not a pod name or name prefix (lower-case alphanumerics, '-', '.')`);
  });
  checkSelector(v['labelSelector'], `${path}.labelSelector`, p);
  stringList(v['ip'], `${path}.ip`, p, (s, sp) => {
    if (!isIpOrCidr(s)) p.add(sp, `${json(s)} is not an IP or CIDR`);
  });
}

function enumList(v: unknown, path: string, allowed: readonly string[], p: Problems): void {
  stringList(v, path, p, (s, sp) => {
    if (!allowed.includes(s)) p.add(sp, `${json(s)} is not one of ${allowed.join(', ')}`);
  });
}

/**
 * The problems of a ContainerNetworkLog spec, each naming its field path; empty when valid. An
 * include filter with no field at all is valid and matches every flow (ACNS: an omitted field
 * includes everything).
 */
export function validateContainerNetworkLogSpec(spec: unknown): string[] {
  const p = new Problems();
  if (!isRecord(spec)) {
    p.add('spec', 'is required (includefilters)');
    return p.list;
  }
  for (const k of Object.keys(spec)) if (k !== 'includefilters') p.add(`spec.${k}`, 'unknown field (want includefilters)');
  const filters = spec['includefilters'];
  if (!Array.isArray(filters) || filters.length === 0) {
    p.add('spec.includefilters', 'must list at least one filter');
    return p.list;
  }
  if (filters.length > MAX_FILTERS) p.add('spec.includefilters', `has ${filters.length} filters; at most ${MAX_FILTERS}`);
  filters.slice(0, MAX_FILTERS).forEach((f, i) => {
    const path = `spec.includefilters[${i}]`;
    if (!isRecord(f)) return p.add(path, 'must be a filter (name, from, to, protocol, verdict)');
    for (const k of Object.keys(f)) {
      if (!(CONTAINER_NETWORK_LOG_FIELDS.filter as readonly string[]).includes(k)) p.add(`${path}.${k}`, 'unknown field (want name, from, to, protocol or verdict)');
    }
    if (f['name'] !== undefined && typeof f['name'] !== 'string') p.add(`${path}.name`, 'must be a string');
    checkEndpoint(f['from'], `${path}.from`, p);
    checkEndpoint(f['to'], `${path}.to`, p);
    enumList(f['protocol'], `${path}.protocol`, CNL_PROTOCOLS, p);
    enumList(f['verdict'], `${path}.verdict`, CNL_VERDICTS, p);
  });
  return p.list;
}
