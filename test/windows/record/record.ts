/**
 * Records real fixtures on a Windows node, to replace the synthetic ones in test/fixtures/windows/
 * (`.\build.ps1 record`; the HostProcess Job test/windows/hostprocess-job.yaml runs it on a node):
 * the raw documents the Windows parsers read — HcnEnumerateEndpoints, each endpoint's
 * HostComputeEndpoint, HNS v1 `GET /endpoints/` and `GET /endpointstats/<id>`, and vfpctrl's port
 * counters — each checked with our own parser before it is written, so a document our parsers
 * cannot read is reported (and still written, as `<name>.unparsed`) instead of silently recorded.
 * Read-only: nothing on the node changes. Addresses and MACs in the documents are scrubbed
 * (consistently, to 192.0.2.0/24, 2001:db8::/32 and the locally administered 02-00-00-00-xx-xx) unless --keep-addresses.
 *
 * The command is record-fixtures.ts:
 *   node dist/test/windows/record/record-fixtures.js --out DIR [--max N] [--keep-addresses]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import {
  ALL_ENDPOINTS_QUERY, openHcn, openHns, parseEndpoint, parseEndpointIds, parseEndpointStats, parsePortMap, parseVfpCounters, runVfpctrl,
} from '../../../src/ffi/windows/index.js';

const MAC_RE = /^([0-9A-Fa-f]{2})([-:])([0-9A-Fa-f]{2})\2([0-9A-Fa-f]{2})\2([0-9A-Fa-f]{2})\2([0-9A-Fa-f]{2})\2([0-9A-Fa-f]{2})$/;

/** Replaces every address and MAC found in a JSON string literal of `text`, the same one the same way. */
export function scrub(text: string, seen: Map<string, string> = new Map()): string {
  const stand = (orig: string, make: (n: number) => string): string => {
    let s = seen.get(orig);
    if (s === undefined) seen.set(orig, (s = make(seen.size + 1)));
    return s;
  };
  return text.replace(/"((?:[^"\\]|\\.)*)"/g, (whole, inner: string) => {
    const [addr, prefix] = inner.split('/', 2) as [string, string | undefined];
    const fam = isIP(addr);
    if (fam && (prefix === undefined || /^\d{1,3}$/.test(prefix))) {
      const s = stand(addr, (n) => (fam === 4 ? `192.0.2.${n % 254 || 254}` : `2001:db8::${n.toString(16)}`));
      return `"${s}${prefix === undefined ? '' : `/${prefix}`}"`;
    }
    const m = MAC_RE.exec(inner);
    if (m) return `"${stand(inner.toUpperCase(), (n) => `02${m[2]}00${m[2]}00${m[2]}00${m[2]}${((n >> 8) & 0xff).toString(16).padStart(2, '0').toUpperCase()}${m[2]}${(n & 0xff).toString(16).padStart(2, '0').toUpperCase()}`)}"`;
    return whole;
  });
}

/** HNS's `{"Success": false, ...}` answer. */
function hnsFailed(text: string): boolean {
  const doc: unknown = JSON.parse(text);
  return typeof doc === 'object' && doc !== null && (doc as { Success?: unknown }).Success === false;
}

export interface RecordReport {
  readonly written: string[];
  readonly problems: string[];
}

export async function record(out: string, max: number, keepAddresses: boolean): Promise<RecordReport> {
  mkdirSync(out, { recursive: true });
  const seen = new Map<string, string>();
  const written: string[] = [];
  const problems: string[] = [];
  const save = (name: string, text: string, check: (t: string) => unknown): void => {
    const body = keepAddresses ? text : scrub(text, seen);
    let file = name;
    try {
      check(body);
    } catch (e) {
      problems.push(`${name}: ${(e as Error).message}`);
      file = `${name}.unparsed`;
    }
    writeFileSync(join(out, file), body);
    written.push(file);
  };
  const hcn = openHcn();
  const hns = openHns();
  const idsText = hcn.enumerateEndpoints(ALL_ENDPOINTS_QUERY);
  save('hcn-enumerate.json', idsText, parseEndpointIds);
  const ids = parseEndpointIds(idsText).slice(0, max);
  const portsText = hns.call('GET', '/endpoints/');
  save('hns-endpoints-v1.json', portsText, parsePortMap);
  const ports = parsePortMap(portsText);
  for (const [i, id] of ids.entries()) {
    try {
      save(`hcn-endpoint-${i}.json`, hcn.endpointProperties(id, ALL_ENDPOINTS_QUERY), (t) => parseEndpoint(t, id));
      // HNS's own failure answer (a detached endpoint has no stats) is a document worth recording too:
      // its parser's error is what the plugin sees then.
      save(`hns-endpointstats-${i}.json`, hns.call('GET', `/endpointstats/${id}`), (t) => hnsFailed(t) || parseEndpointStats(t, id));
    } catch (e) {
      problems.push(`endpoint ${i}: ${(e as Error).message}`);
    }
  }
  const wanted = ids.map((id) => ports.get(id.toUpperCase())).filter((p): p is string => p !== undefined);
  const counters = await runVfpctrl(wanted);
  [...counters.values()].forEach((text, i) => save(`vfp-port-counter-${i}.txt`, text, parseVfpCounters));
  writeFileSync(join(out, 'README.md'), `Recorded by test/windows/record/record-fixtures.ts on ${new Date().toISOString()}${keepAddresses ? '' : ' (addresses and MACs scrubbed)'}.\nProblems: ${problems.length ? `\n- ${problems.join('\n- ')}` : 'none'}\n`);
  return { written, problems };
}

