/**
 * What only Windows can say in `retina-agent diagnose`: the HNS networks and every endpoint (not only
 * the attached ones hnsstats reads), each endpoint's VFP port and counters, the interface table, and
 * what is known of ETW, and where HNS and VFP disagree. Read only: HCN enumerate/open/query/close, HNSCall
 * GET, GetIfTable2, `vfpctrl /get-port-counter` and `vfpctrl /list-vmswitch-port`; nothing is created, attached or changed. One endpoint or port that
 * fails carries its error in its row and the rest is still listed.
 */
import {
  ALL_ENDPOINTS_QUERY, ATTACHED_SHARING_QUERY, PKTMON_SESSION_NAME, WindowsCallError, compareHnsVfp, hnsOutput, openHcn, openHns, openIphlpapi,
  parseEndpointIds, parseJsonU64, parsePortMap, parseRemoteEndpoints, parseVfpCounters, parseVfpSwitchPorts, queryEtwSession, runVfpctrl, runVfpctrlList,
  type VfpDirection,
} from '../../ffi/windows/index.js';
import { errMessage } from '../../plugin/index.js';
import type { PlatformInfo } from '../capabilities.js';
import type { DiagnoseSection } from '../diagnose.js';

/** At most this many endpoints are listed, and this many VFP ports read (two cmd.exe batches). */
export const MAX_ENDPOINTS = 2000;
export const MAX_VFP_PORTS = 80;
/** cmd.exe running vfpctrl is killed after this (the section itself may give up sooner). */
const VFPCTRL_TIMEOUT_MS = 30_000;

type Doc = Record<string, unknown>;
const isDoc = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** `[{Type: 'ACL'}, {Type: 'ACL'}, {Type: 'OutBoundNAT'}]` → `ACL x2, OutBoundNAT`. */
export function summarisePolicies(policies: unknown): string | undefined {
  if (!Array.isArray(policies) || policies.length === 0) return undefined;
  const counts = new Map<string, number>();
  for (const p of policies) {
    const type = isDoc(p) ? (str(p['Type']) ?? 'unknown') : 'unknown';
    counts.set(type, (counts.get(type) ?? 0) + 1);
  }
  return [...counts].map(([t, n]) => (n > 1 ? `${t} x${n}` : t)).join(', ');
}

/** HNS v1 `GET /networks/`: id, name, type, subnets, management IP, MAC, state, policies. */
function networks(hns: ReturnType<typeof openHns>): unknown[] {
  const out = hnsOutput(hns.call('GET', '/networks/'), 'GET /networks/');
  if (out === null || out === undefined) return [];
  if (!Array.isArray(out)) throw new Error('GET /networks/: Output is not an array');
  return out.filter(isDoc).map((n) => ({
    id: str(n['ID']), name: str(n['Name']), type: str(n['Type']),
    subnets: Array.isArray(n['Subnets']) ? n['Subnets'].filter(isDoc).map((s) => str(s['AddressPrefix'])).filter((s) => s !== undefined) : [],
    managementIp: str(n['ManagementIP']), mac: str(n['SourceMac']), state: n['State'], policies: summarisePolicies(n['Policies']),
  }));
}

/** One HostComputeEndpoint document as a row (every IP configuration, not only the first). */
function endpointRow(id: string, text: string): Doc {
  const doc = parseJsonU64(text, `endpoint ${id}`);
  if (!isDoc(doc)) throw new Error(`endpoint ${id}: expected a JSON object`);
  const ipc = doc['IpConfigurations'];
  const ips = Array.isArray(ipc) ? ipc.filter(isDoc).map((c) => (c['PrefixLength'] === undefined ? str(c['IpAddress']) : `${str(c['IpAddress'])}/${String(c['PrefixLength'])}`)) : [];
  return {
    id: str(doc['ID']) ?? id, name: str(doc['Name']), network: str(doc['HostComputeNetwork']), state: doc['State'],
    ips: ips.filter((s) => s !== undefined), mac: str(doc['MacAddress']), policies: summarisePolicies(doc['Policies']),
  };
}

/** The `hns` section: networks (HNS v1) and every endpoint (HCN, no state filter). */
export function hnsState(): unknown {
  const hcn = openHcn();
  const hns = openHns();
  let networkList: unknown;
  try {
    networkList = networks(hns);
  } catch (e) {
    networkList = { error: errMessage(e) };
  }
  const ids = parseEndpointIds(hcn.enumerateEndpoints(ALL_ENDPOINTS_QUERY));
  const endpoints = ids.slice(0, MAX_ENDPOINTS).map((id) => {
    try {
      return endpointRow(id, hcn.endpointProperties(id, ALL_ENDPOINTS_QUERY));
    } catch (e) {
      return { id, error: e instanceof WindowsCallError && e.notFound ? `gone since it was listed (${e.message})` : errMessage(e) };
    }
  });
  return { networks: networkList, endpointCount: ids.length, endpointsTruncated: ids.length > MAX_ENDPOINTS, endpoints };
}

const numbers = (d: VfpDirection): Record<string, number> => Object.fromEntries(Object.entries(d).map(([k, v]) => [k, Number(v)]));

/** The `vfp` section: each endpoint's VFP port (HNS v1 "Endpoint Port" allocator) and its counters per direction. */
export async function vfpPorts(): Promise<unknown> {
  const portOf = parsePortMap(openHns().call('GET', '/endpoints/'));
  const entries = [...portOf].slice(0, MAX_VFP_PORTS);
  let texts = new Map<string, string>();
  let vfpctrlError: string | undefined;
  try {
    texts = await runVfpctrl(entries.map(([, port]) => port), VFPCTRL_TIMEOUT_MS);
  } catch (e) {
    vfpctrlError = errMessage(e);
  }
  // One row per port and direction (a table in the text rendering); a port without counters: one row with its error.
  const ports = entries.flatMap(([endpoint, port]): Doc[] => {
    const text = texts.get(port);
    if (text === undefined) return [{ endpoint, port, error: vfpctrlError ?? 'vfpctrl printed nothing for this port' }];
    const c = parseVfpCounters(text);
    if (!Object.keys(c.in).length && !Object.keys(c.out).length) return [{ endpoint, port, error: `no counters in vfpctrl's output (${JSON.stringify(text.trim().slice(0, 120))})` }];
    const issues = c.issues.length ? c.issues : undefined;
    return [{ endpoint, port, direction: 'in', ...numbers(c.in), issues }, { endpoint, port, direction: 'out', ...numbers(c.out), issues }];
  });
  return { portCount: portOf.size, portsTruncated: portOf.size > MAX_VFP_PORTS, vfpctrlError, ports };
}

/**
 * The `hns-vfp` section: what microsoft/SDN's networkhealth.ps1 lets one check by hand. Each attached
 * HCN endpoint (not remote) against the vSwitch's VFP ports (`vfpctrl /list-vmswitch-port /format 1`):
 * endpoints whose HNS "Endpoint Port" VFP does not list (or that have none), and VFP ports no endpoint
 * claims (the switch's ExternalPort and Container NIC ports left out). `disagreements` says `none`, how
 * many, or why it could not tell.
 */
export async function hnsVfp(): Promise<unknown> {
  let list: ReturnType<typeof parseVfpSwitchPorts>;
  let input: { endpoints: string[]; portOf: Map<string, string>; remote: Set<string> };
  try {
    const ids = parseEndpointIds(openHcn().enumerateEndpoints(ATTACHED_SHARING_QUERY));
    const text = openHns().call('GET', '/endpoints/');
    input = { endpoints: ids, portOf: parsePortMap(text), remote: parseRemoteEndpoints(text) };
    list = parseVfpSwitchPorts(await runVfpctrlList(VFPCTRL_TIMEOUT_MS));
  } catch (e) {
    return { disagreements: `could not tell: ${errMessage(e)}` };
  }
  const d = compareHnsVfp({ ...input, vfp: list.ports });
  const a = d.endpointsWithoutPort.length;
  const b = d.portsWithoutEndpoint.length;
  return {
    disagreements: a + b === 0 ? 'none' : `${a} endpoint${a === 1 ? '' : 's'} without a VFP port, ${b} VFP port${b === 1 ? '' : 's'} without an endpoint`,
    endpointsChecked: d.endpointsChecked, portsChecked: d.portsChecked,
    endpointsWithoutPort: d.endpointsWithoutPort, portsWithoutEndpoint: d.portsWithoutEndpoint,
    issues: list.issues.length ? list.issues : undefined,
  };
}

const IF_TYPES: Readonly<Record<number, string>> = { 6: 'ethernet', 24: 'loopback', 53: 'propVirtual', 71: 'wifi', 131: 'tunnel', 144: 'ieee1394' };
const OPER_STATUS = ['', 'up', 'down', 'testing', 'unknown', 'dormant', 'notPresent', 'lowerLayerDown'];

/** The `interfaces` section: GetIfTable2, one row per interface (filter interfaces included). */
export function interfaces(): unknown[] {
  return openIphlpapi().interfaces().map((r) => ({
    index: r.index, name: r.description, alias: r.alias, type: IF_TYPES[r.type] ?? `type ${r.type}`, mac: r.mac || undefined, mtu: r.mtu,
    speedMbps: r.transmitBps > 0 && r.transmitBps < 2 ** 53 ? Math.round(r.transmitBps / 1e6) : undefined,
    state: OPER_STATUS[r.operStatus] || `status ${r.operStatus}`,
  }));
}

/**
 * The `etw` section: whether the pktmon plugin's real-time session runs (ControlTraceW QUERY, which
 * changes nothing) and its loss counters; `running: false` when it does not (pktmon off, or no agent).
 */
export function etwState(): unknown {
  const q = queryEtwSession(PKTMON_SESSION_NAME);
  return { session: PKTMON_SESSION_NAME, consumer: 'pktmon plugin (pod level)', ...q };
}

export function osSections(_info: PlatformInfo): readonly DiagnoseSection[] {
  return [
    { name: 'hns', collect: hnsState },
    { name: 'vfp', collect: vfpPorts },
    { name: 'hns-vfp', collect: hnsVfp },
    { name: 'interfaces', collect: interfaces },
    { name: 'etw', collect: etwState },
  ];
}
