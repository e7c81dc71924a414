/**
 * Capture file naming, as Retina (pkg/capture/file): `<capture>-<node>-<YYYYMMDDhhmmss>UTC`, the
 * tarball `<that>.tar.gz` holding the folder of the same name, and `kubectl-retina capture download
 * --all`'s bundle `all-captures-<YYYYMMDDhhmmss>.tar.gz`.
 */
import { FILENAME_ANNOTATION } from './job.js';

export const TARBALL_SUFFIX = '.tar.gz';

/**
 * Object-storage metadata naming the capture a tarball belongs to (blob metadata `capturename`, S3
 * `x-amz-meta-capture-name`): names alone cannot tell capture `web`'s tarball from capture `web-2`'s
 * (`web-2-node-…` is also `web-` plus a node `2-node`), so downloads by name check it when present.
 */
export const BLOB_CAPTURE_METADATA = 'capturename';
export const S3_CAPTURE_METADATA = 'capture-name';

/** `20060102150405` in UTC (Go's layout in Retina's TimeToString). */
export function captureTimestamp(at: Date): string {
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  return `${p(at.getUTCFullYear(), 4)}${p(at.getUTCMonth() + 1)}${p(at.getUTCDate())}${p(at.getUTCHours())}${p(at.getUTCMinutes())}${p(at.getUTCSeconds())}`;
}

/** `<capture>-<node>-<YYYYMMDDhhmmss>UTC`: the folder in the tarball and the pcap's base name. */
export function captureBaseName(capture: string, node: string, at: Date): string {
  return `${capture}-${node}-${captureTimestamp(at)}UTC`;
}

export function captureTarballName(capture: string, node: string, at: Date): string {
  return captureBaseName(capture, node, at) + TARBALL_SUFFIX;
}

export function allCapturesBundleName(at: Date): string {
  return `all-captures-${captureTimestamp(at)}${TARBALL_SUFFIX}`;
}

/**
 * The tarball name from a FILENAME_ANNOTATION (`retina-capture-filename`) annotation: Retina writes the base name (and
 * appends `.tar.gz` when downloading); ours writes the tarball name. Both are accepted. A name with a
 * path separator is refused (it would escape the host directory).
 */
export function tarballFromAnnotation(value: string): string {
  const v = value.trim();
  if (v === '' || v.includes('/') || v.includes('\\') || v === '.' || v === '..') {
    throw new Error(`annotation ${FILENAME_ANNOTATION}: ${JSON.stringify(value)} is not a file name`);
  }
  return v.endsWith(TARBALL_SUFFIX) ? v : v + TARBALL_SUFFIX;
}

export interface ParsedTarballName {
  readonly capture: string;
  readonly node: string;
  readonly timestamp: string;
  /** The capture's start time, from the name. */
  readonly at: Date;
}

const TS = /^(.+)-(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})UTC\.tar\.gz$/;

/**
 * Splits `<capture>-<node>-<ts>UTC.tar.gz` for a known capture name (both capture and node names may
 * hold dashes, so the capture name decides where the node starts). Undefined when it does not match.
 */
export function parseTarballName(file: string, capture: string): ParsedTarballName | undefined {
  const m = TS.exec(file);
  if (!m) return undefined;
  const head = m[1] ?? '';
  if (!head.startsWith(capture + '-')) return undefined;
  const node = head.slice(capture.length + 1);
  if (node === '') return undefined;
  const [y, mo, d, h, mi, s] = m.slice(2, 8).map(Number) as [number, number, number, number, number, number];
  const at = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  if (Number.isNaN(at.getTime()) || at.getUTCMonth() !== mo - 1 || at.getUTCDate() !== d) return undefined;
  return { capture, node, timestamp: m.slice(2, 8).join(''), at };
}

/** Whether `file` is a tarball of `capture` written on `node` (the host-directory fallback's filter). */
export function isNodeTarball(file: string, capture: string, node: string): boolean {
  return parseTarballName(file, capture)?.node === node;
}
