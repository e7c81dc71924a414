/**
 * Deleted pods, as the series stores that forget them take them (the Metrics Module's adv_* families,
 * src/metrics/module/forget.ts, and the Hubble metrics, src/metrics/hubble): what is gone, and the
 * sets one removal pass looks values up in.
 */
import { SEP } from './series.js';

/**
 * What is gone, as the caller (which knows which pods live now) decided: identities still held by
 * a live pod are left out, so a live pod's series are never removed.
 */
export interface GonePods {
  /** Deleted pods (no pod of that namespace and name lives now). */
  readonly pods: readonly { readonly namespace: string; readonly name: string }[];
  /** Deleted pods' names that no live pod has in any namespace: for label sets without `namespace`. */
  readonly names: readonly string[];
  /** Deleted pods' IPs (IPv4 and IPv6, as the cache spells them) that no live endpoint holds now. */
  readonly ips: readonly string[];
}

/** The sets one pass looks values up in. */
export interface GoneSets {
  readonly pods: ReadonlySet<string>;
  readonly names: ReadonlySet<string>;
  readonly ips: ReadonlySet<string>;
}

export function goneSets(g: GonePods): GoneSets {
  return { pods: new Set(g.pods.map((p) => p.namespace + SEP + p.name)), names: new Set(g.names), ips: new Set(g.ips) };
}

