/**
 * One hnsstats reading: the attached endpoints (HCN), their counters (HNS v1), their VFP ports'
 * counters (vfpctrl, a few at a time), and where HNS and the vSwitch's VFP port list disagree
 * (compareHnsVfp: an attached endpoint whose port VFP does not list, a VFP port no endpoint claims). Never throws for one endpoint: an endpoint that vanished
 * between enumerate and open is skipped, any other failure is named in `failures` and the rest is
 * still reported.
 */
import {
  ATTACHED_SHARING_QUERY, WindowsCallError, compareHnsVfp, parseEndpoint, parseEndpointIds, parseEndpointStats, parsePortMap, parseRemoteEndpoints,
  parseVfpCounters, parseVfpSwitchPorts, type HcnClient, type HnsClient, type HnsVfpDisagreements, type VfpCounters, type VfpSwitchPort,
} from '../../../ffi/windows/index.js';
import { errMessage } from '../../../plugin/index.js';
import type { EndpointReading } from './node-sums.js';

export interface HnsSources {
  readonly hcn: HcnClient;
  readonly hns: HnsClient;
  /** The text of `vfpctrl /port <port> /get-port-counter` for each port (runVfpctrl). */
  readonly vfpctrl: (ports: readonly string[]) => Promise<ReadonlyMap<string, string>>;
  /** The text of `vfpctrl /list-vmswitch-port /format 1` (runVfpctrlList). */
  readonly vfpList: () => Promise<string>;
}

export interface HnsReading {
  readonly endpoints: readonly EndpointReading[];
  /** Endpoints enumerated but gone by the time they were opened. */
  readonly vanished: number;
  /** What failed, one entry per source (stable text: no counters). */
  readonly failures: readonly string[];
  /** HNS/VFP disagreements over the attached endpoints not vanished; undefined when either list could not be read (named in failures). */
  readonly disagreements: HnsVfpDisagreements | undefined;
}

export async function readHns(src: HnsSources): Promise<HnsReading> {
  const failures: string[] = [];
  const ids = parseEndpointIds(src.hcn.enumerateEndpoints(ATTACHED_SHARING_QUERY));
  let ports = new Map<string, string>();
  let remote: Set<string> | undefined;
  try {
    const text = src.hns.call('GET', '/endpoints/');
    ports = parsePortMap(text);
    remote = parseRemoteEndpoints(text);
  } catch (e) {
    failures.push(`VFP ports (GET /endpoints/): ${errMessage(e)}`);
  }
  const gone = new Set<string>();
  const endpoints: { r: Omit<EndpointReading, 'vfp'>; port: string | undefined }[] = [];
  let vanished = 0;
  for (const id of ids) {
    try {
      const ep = parseEndpoint(src.hcn.endpointProperties(id, ATTACHED_SHARING_QUERY), id);
      if (ep.ip === undefined) continue; // Retina: endpoints without an IP are not reported
      const stats = parseEndpointStats(src.hns.call('GET', `/endpointstats/${id}`), id);
      endpoints.push({ r: { id, ip: ep.ip, stats }, port: ports.get(id.toUpperCase()) });
    } catch (e) {
      if (e instanceof WindowsCallError && e.notFound) {
        vanished++;
        gone.add(id);
      } else failures.push(`endpoint ${id}: ${errMessage(e)}`);
    }
  }
  const vfp = await vfpCounters(src, endpoints, failures);
  const switchPorts = await vfpSwitchPorts(src, failures);
  const disagreements = remote && switchPorts ? compareHnsVfp({ endpoints: ids.filter((id) => !gone.has(id)), portOf: ports, remote, vfp: switchPorts }) : undefined;
  return { endpoints: endpoints.map(({ r, port }) => ({ ...r, vfp: port ? vfp.get(port) : undefined })), vanished, failures: failures.sort(), disagreements };
}

/** The vSwitch's VFP ports; a list that cannot be run or read is named in `failures` (a port that cannot be read too, and the rest is kept). */
async function vfpSwitchPorts(src: HnsSources, failures: string[]): Promise<readonly VfpSwitchPort[] | undefined> {
  try {
    const list = parseVfpSwitchPorts(await src.vfpList());
    if (list.issues.length) failures.push(`vfpctrl /list-vmswitch-port: ${list.issues.join('; ')}`);
    return list.ports;
  } catch (e) {
    failures.push(`VFP port list: ${errMessage(e)}`);
    return undefined;
  }
}

/** Each port's parsed counters; a port vfpctrl printed nothing usable for is named in `failures`. */
async function vfpCounters(src: HnsSources, endpoints: readonly { r: { id: string }; port: string | undefined }[], failures: string[]): Promise<Map<string, VfpCounters>> {
  const ports = endpoints.flatMap((e) => (e.port ? [e.port] : []));
  const out = new Map<string, VfpCounters>();
  if (!ports.length) return out;
  let texts: ReadonlyMap<string, string>;
  try {
    texts = await src.vfpctrl(ports);
  } catch (e) {
    failures.push(`vfpctrl: ${errMessage(e)}`);
    return out;
  }
  for (const { r, port } of endpoints) {
    if (!port) continue;
    const text = texts.get(port);
    const c = text === undefined ? undefined : parseVfpCounters(text);
    if (!c || (!Object.keys(c.in).length && !Object.keys(c.out).length)) {
      failures.push(`vfpctrl port ${port} of ${r.id}: no counters in its output${text ? ` (${JSON.stringify(text.trim().slice(0, 120))})` : ''}`);
      continue;
    }
    if (c.issues.length) failures.push(`vfpctrl port ${port} of ${r.id}: ${c.issues.join('; ')}`);
    out.set(port, c);
  }
  return out;
}
