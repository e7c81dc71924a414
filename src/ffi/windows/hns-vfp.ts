/**
 * Where HNS and VFP disagree, as microsoft/SDN's networkhealth.ps1 and collectlogs.ps1 let one check
 * by hand: an attached HNS endpoint whose "Endpoint Port" is not among the vSwitch's VFP ports (or
 * that has no port at all), and a VFP port that no endpoint claims. The vSwitch's own ports are not
 * endpoints' and are left out: `ExternalPort` (the physical NIC) and `Container NIC <id>` (the host's
 * vNIC, the management port). Remote endpoints have no port on this node and are left out too. Pure.
 */
import type { VfpSwitchPort } from './vfp.js';

export interface HnsVfpInput {
  /** The HCN endpoints to check (attached ones: a created, unattached endpoint has no port yet). */
  readonly endpoints: readonly string[];
  /** Endpoint ID (upper case) → its VFP port GUID (HNS v1 "Endpoint Port" allocator, parsePortMap). */
  readonly portOf: ReadonlyMap<string, string>;
  /** Remote endpoint IDs (upper case, parseRemoteEndpoints). */
  readonly remote: ReadonlySet<string>;
  readonly vfp: readonly VfpSwitchPort[];
}

export interface EndpointWithoutPort { readonly endpoint: string; readonly port: string | undefined; readonly reason: string }
export interface PortWithoutEndpoint { readonly port: string; readonly id: string | undefined; readonly mac: string | undefined }

export interface HnsVfpDisagreements {
  readonly endpointsWithoutPort: readonly EndpointWithoutPort[];
  readonly portsWithoutEndpoint: readonly PortWithoutEndpoint[];
  /** Endpoints and ports compared (remote endpoints and the switch's own ports not counted). */
  readonly endpointsChecked: number;
  readonly portsChecked: number;
}

/** GUIDs compare without braces and case. */
const key = (guid: string): string => guid.trim().replace(/^\{(.*)\}$/, '$1').toUpperCase();

/** The vSwitch's own ports, which no endpoint claims: the external NIC and the host vNIC (networkhealth.ps1's `isHostPort`). */
export function isSwitchPort(p: VfpSwitchPort): boolean {
  return p.id === 'ExternalPort' || (p.id ?? '').startsWith('Container NIC');
}

export function compareHnsVfp(input: HnsVfpInput): HnsVfpDisagreements {
  const vfpPorts = new Set(input.vfp.map((p) => key(p.name)));
  const claimed = new Set<string>();
  const endpointsWithoutPort: EndpointWithoutPort[] = [];
  let endpointsChecked = 0;
  for (const endpoint of input.endpoints) {
    const id = key(endpoint);
    if (input.remote.has(id)) continue;
    endpointsChecked++;
    const port = input.portOf.get(id);
    if (port === undefined) {
      endpointsWithoutPort.push({ endpoint, port, reason: 'HNS gives it no "Endpoint Port"' });
      continue;
    }
    claimed.add(key(port));
    if (!vfpPorts.has(key(port))) endpointsWithoutPort.push({ endpoint, port, reason: 'its HNS port is not a VFP port' });
  }
  // A port HNS assigns to an endpoint not checked here (detached, or listed after the enumeration) is still claimed.
  for (const p of input.portOf.values()) claimed.add(key(p));
  const own = input.vfp.filter((p) => !isSwitchPort(p));
  const portsWithoutEndpoint = own.filter((p) => !claimed.has(key(p.name))).map((p) => ({ port: p.name, id: p.id, mac: p.mac }));
  return { endpointsWithoutPort, portsWithoutEndpoint, endpointsChecked, portsChecked: own.length };
}
