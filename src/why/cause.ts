/**
 * The one most likely cause, from what the API server and the agents said: pure, so that it is
 * tested with flows of known content (cause.test.ts). The order, first that holds wins:
 *
 *  1. DNS (DST is a name): its answers to SRC were NXDOMAIN / another error / never came;
 *  2. the Service (DST is one): it has no port PORT, or no ready endpoint;
 *  3. the latest try got through (a reply after the last drop or reset): reachable;
 *  4. drops by netfilter (a NetworkPolicy selecting either pod named as the likely rule);
 *  5. no listener: the destination reset the connection, or dropped it for want of a socket;
 *  6. no route (the kernel's routing and neighbour drop reasons);
 *  7. any other drop, by its reason;
 *  8. SRC sent, DST never answered, nothing dropped that the agents saw;
 *  9. traffic both ways: reachable; 10. nothing at all: no recent traffic, or no agent could be read.
 */
import { ACK, RST, SYN, asksFor, rcodeName, type SeenFlow } from './flows.js';

export type CauseCode =
  | 'nxdomain' | 'dns-error' | 'dns-no-answer' | 'service-port' | 'service-no-endpoints' | 'policy' | 'netfilter-drop'
  | 'no-listener' | 'no-route' | 'dropped' | 'no-answer' | 'reachable' | 'no-traffic' | 'no-agent';

export interface Cause {
  readonly code: CauseCode;
  /** The cause in plain words. */
  readonly summary: string;
  /** The node where it happened, when one is known. */
  readonly node?: string;
  /** What it was decided on, one line each. */
  readonly evidence: readonly string[];
}

export interface SideFacts {
  /** How it is named in messages. */
  readonly text: string;
  readonly ips: ReadonlySet<string>;
}

export interface ServiceFacts {
  readonly text: string;
  /** `selector app=web`, or undefined for a Service without one (its endpoints are made by hand). */
  readonly selector: string | undefined;
  readonly ready: number;
  readonly notReady: number;
  /** Pods the selector matches (undefined when not counted). */
  readonly selectedPods: number | undefined;
  /** The Service's ports (`80/TCP`), and whether the asked port is among them. */
  readonly ports: readonly string[];
  readonly portMissing: boolean;
}

export interface Findings {
  readonly src: SideFacts;
  readonly dst: SideFacts;
  /** The destination port asked for (DST:PORT); flows to other ports are left out. */
  readonly port: number | undefined;
  /** Ports a flow to DST may carry for that port (a Service port and its target ports). */
  readonly dstPorts: ReadonlySet<number>;
  readonly flows: readonly SeenFlow[];
  /** NetworkPolicies (ns/name) selecting DST for ingress or SRC for egress. */
  readonly policies: readonly string[];
  readonly service: ServiceFacts | undefined;
  /** DST as a DNS name (then `dst.ips` are its answers, if any came). */
  readonly dnsName: string | undefined;
  /** Lines about the agents asked (which answered, which could not). */
  readonly agentNotes: readonly string[];
  /** How many agents answered (0: no flows could be read at all). */
  readonly agentsAnswered: number;
  /** Pods by IP (ns/name) the API server named, for addresses the agents' flows left unnamed (a DNS server). */
  readonly podNames?: ReadonlyMap<string, string>;
  readonly nowMs: number;
}

const NETFILTER = /NETFILTER|IPTABLE|NFT|EBT|POLICY/;
const ROUTE = /NOROUTE|NO_ROUTE|OUTNOROUTES|NEIGH|UNREACHABLE|INADDRERRORS|HOST_UNREACH/;
const NO_SOCKET = /NO_SOCKET|SOCKET_FILTER_NOSOCK/;

function ago(nowMs: number, t: number): string {
  const s = Math.max(0, (nowMs - t) / 1000);
  return s < 10 ? `${s.toFixed(1)} s ago` : `${Math.round(s)} s ago`;
}

/** The most frequent key, its count and its latest time. */
function top<T>(xs: readonly T[], key: (x: T) => string, time: (x: T) => number): { key: string; n: number; last: number } | undefined {
  const m = new Map<string, { n: number; last: number }>();
  for (const x of xs) {
    const k = key(x);
    const e = m.get(k) ?? { n: 0, last: 0 };
    e.n++;
    e.last = Math.max(e.last, time(x));
    m.set(k, e);
  }
  let best: { key: string; n: number; last: number } | undefined;
  for (const [k, e] of m) if (!best || e.n > best.n || (e.n === best.n && e.last > best.last)) best = { key: k, ...e };
  return best;
}

const latest = (xs: readonly SeenFlow[]): number => xs.reduce((a, x) => Math.max(a, x.timeMs), 0);

function dnsCause(f: Findings, name: string): Cause | undefined {
  const mine = f.flows.filter((x) => x.dns && asksFor(x.dns.query, name) && (f.src.ips.has(x.srcIp) || f.src.ips.has(x.dstIp)));
  const answers = mine.filter((x) => x.dns?.response && f.src.ips.has(x.dstIp));
  const queries = mine.filter((x) => x.dns && !x.dns.response && f.src.ips.has(x.srcIp));
  const names = [...new Set(mine.map((x) => x.dns?.query ?? ''))].slice(0, 6).join(', ');
  const withIps = answers.filter((x) => x.dns?.rcode === 0 && x.dns.ips.length > 0);
  const evidence = [`DNS: ${queries.length} queries and ${answers.length} answers for ${name} from or to ${f.src.text}${names ? ` (${names})` : ''}`];
  if (withIps.length > 0) return undefined; // it resolves: the rest of the ranking looks at its addresses
  const errors = answers.filter((x) => (x.dns?.rcode ?? 0) !== 0);
  const nx = errors.filter((x) => x.dns?.rcode === 3);
  const server = (xs: readonly SeenFlow[]): string => [...new Set(xs.map((x) => {
    const pod = x.srcPod || f.podNames?.get(x.srcIp);
    return pod ? `pod ${pod}, ${x.srcIp}` : x.srcIp;
  }))].join('; ');
  if (nx.length > 0) {
    return {
      code: 'nxdomain', node: top(nx, (x) => x.node, (x) => x.timeMs)?.key,
      summary: `NXDOMAIN for name ${name}: the DNS server (${server(nx)}) says it does not exist`,
      evidence: [...evidence, `DNS: ${nx.length} answers NXDOMAIN${errors.length > nx.length ? `, ${errors.length - nx.length} other errors` : ''}, none with an address; the last ${ago(f.nowMs, latest(nx))}`],
    };
  }
  if (errors.length > 0) {
    const t = top(errors, (x) => rcodeName(x.dns?.rcode ?? 0), (x) => x.timeMs);
    return {
      code: 'dns-error', node: errors[0]?.node,
      summary: `DNS fails for name ${name}: the server (${server(errors)}) answers ${t?.key}`,
      evidence: [...evidence, `DNS: ${errors.length} answers with an error (${t?.n} ${t?.key}), none with an address; the last ${ago(f.nowMs, latest(errors))}`],
    };
  }
  if (answers.length > 0) {
    return { code: 'dns-error', summary: `name ${name} has no address: its answers carry none`, node: answers[0]?.node, evidence: [...evidence, `DNS: ${answers.length} answers NOERROR without an address`] };
  }
  if (queries.length > 0) {
    const drops = f.flows.filter((x) => x.dropped && f.src.ips.has(x.srcIp) && x.dstPort === 53);
    const d = top(drops, (x) => `${x.node}\u0000${x.dropReason}`, (x) => x.timeMs);
    const [node, reason] = d ? d.key.split('\u0000') : [];
    return {
      code: 'dns-no-answer', node: node ?? queries[0]?.node,
      summary: d ? `DNS queries for ${name} are dropped on node ${node} (${reason})` : `DNS queries for ${name} get no answer`,
      evidence: [...evidence, d ? `drops: ${d.n} DNS packets from ${f.src.text} dropped on node ${node} (${reason}), the last ${ago(f.nowMs, d.last)}` : 'DNS: no answer seen to any query'],
    };
  }
  return undefined;
}

/** A line per node: what went each way, for the evidence. */
function perNode(f: Findings, fwd: readonly SeenFlow[], rev: readonly SeenFlow[]): string[] {
  const nodes = [...new Set([...fwd, ...rev].map((x) => x.node))].sort();
  return nodes.map((n) => {
    const a = fwd.filter((x) => x.node === n);
    const b = rev.filter((x) => x.node === n);
    const syn = a.filter((x) => (x.flags & (SYN | ACK)) === SYN).length;
    const synAck = b.filter((x) => (x.flags & (SYN | ACK)) === (SYN | ACK)).length;
    const rst = b.filter((x) => x.flags & RST).length;
    const drops = [...a, ...b].filter((x) => x.dropped);
    const reasons = [...new Set(drops.map((x) => x.dropReason))].join(', ');
    const tcp = [...a, ...b].some((x) => x.proto === 'TCP') ? `, SYN ${syn}, SYN-ACK ${synAck}, RST back ${rst}` : '';
    return `node ${n}: ${a.length} flows ${f.src.text} -> ${f.dst.text}, ${b.length} back${tcp}, dropped ${drops.length}${reasons ? ` (${reasons})` : ''}; the last ${ago(f.nowMs, latest([...a, ...b]))}`;
  });
}

export function rankCause(f: Findings): Cause {
  const notes = [...f.agentNotes];
  if (f.dnsName) {
    const d = dnsCause(f, f.dnsName);
    if (d) return { ...d, evidence: [...d.evidence, ...notes] };
    if (f.dst.ips.size === 0) {
      if (f.agentsAnswered === 0) return noAgent(f, notes);
      return { code: 'no-traffic', summary: `no DNS query for ${f.dnsName} from ${f.src.text} in the agents' recent flows`, evidence: [`DNS: nothing for ${f.dnsName}`, ...notes] };
    }
  }
  const s = f.service;
  if (s?.portMissing) {
    return { code: 'service-port', summary: `${s.text} has no port ${f.port} (its ports: ${s.ports.join(', ') || 'none'})`, evidence: [`API: ${s.text} ports ${s.ports.join(', ') || 'none'}`, ...notes] };
  }
  if (s && s.ready === 0) {
    const why = s.selector === undefined ? 'it has no selector and no endpoints were made for it'
      : s.selectedPods === 0 ? `its ${s.selector} matches no pod` : s.notReady > 0 || (s.selectedPods ?? 0) > 0 ? `its ${s.selector} matches ${s.selectedPods ?? s.notReady} pods, none ready` : `its ${s.selector} gives no endpoint`;
    return {
      code: 'service-no-endpoints', summary: `${s.text} has no endpoints: ${why}`,
      evidence: [`API: ${s.text}: ${s.ready} ready and ${s.notReady} not-ready endpoints in its EndpointSlices${s.selectedPods !== undefined ? `; ${s.selectedPods} pods match ${s.selector}` : ''}`, ...perNode(f, flowsOf(f).fwd, flowsOf(f).rev), ...notes],
    };
  }
  const { fwd, rev } = flowsOf(f);
  const lines = [...perNode(f, fwd, rev), ...notes];
  const port = f.port === undefined ? '' : ` port ${f.port}`;
  const drops = [...fwd, ...rev].filter((x) => x.dropped);
  const resets = rev.filter((x) => x.flags & RST);
  const replies = rev.filter((x) => !x.dropped && !(x.flags & RST) && (x.proto !== 'TCP' || x.flags & ACK));
  const lastBad = Math.max(latest(drops), latest(resets));
  if (replies.length > 0 && latest(replies) > lastBad) {
    const earlier = lastBad > 0 ? `; earlier, ${drops.length} drops and ${resets.length} resets, the last ${ago(f.nowMs, lastBad)}` : '';
    return { code: 'reachable', summary: `${f.dst.text}${port} answers ${f.src.text}: the last reply ${ago(f.nowMs, latest(replies))}${earlier}`, evidence: lines };
  }
  const nf = drops.filter((x) => NETFILTER.test(x.dropReason));
  if (nf.length > 0) {
    const t = top(nf, (x) => `${x.node}\u0000${x.dropReason}`, (x) => x.timeMs);
    const [node, reason] = (t?.key ?? '').split('\u0000');
    if (f.policies.length > 0) {
      return { code: 'policy', node, summary: `dropped by netfilter on node ${node} (${reason}): NetworkPolicy ${f.policies.join(', ')} selects these pods and does not allow it`, evidence: [...lines, `API: NetworkPolicy ${f.policies.join(', ')}`] };
    }
    return { code: 'netfilter-drop', node, summary: `dropped by netfilter on node ${node} (${reason}): ${t?.n} packets ${f.src.text} -> ${f.dst.text}${port}, the last ${ago(f.nowMs, t?.last ?? 0)}`, evidence: lines };
  }
  const noSock = drops.filter((x) => NO_SOCKET.test(x.dropReason));
  if (resets.length > 0 || noSock.length > 0) {
    const p = f.port ?? (resets[0]?.srcPort || noSock[0]?.dstPort);
    const node = (resets[0] ?? noSock[0])?.node;
    const how = resets.length > 0 ? `it answered ${resets.length} times with RST` : `the kernel dropped ${noSock.length} packets for want of a socket (NO_SOCKET)`;
    return { code: 'no-listener', node, summary: `no listener on port ${p} of ${f.dst.text}: ${how}`, evidence: lines };
  }
  const route = drops.filter((x) => ROUTE.test(x.dropReason));
  const other = route.length > 0 ? route : drops;
  if (other.length > 0) {
    const t = top(other, (x) => `${x.node}\u0000${x.dropReason}`, (x) => x.timeMs);
    const [node, reason] = (t?.key ?? '').split('\u0000');
    if (route.length > 0) return { code: 'no-route', node, summary: `no route from node ${node} to ${f.dst.text} (${reason}): ${t?.n} packets dropped`, evidence: lines };
    return { code: 'dropped', node, summary: `dropped on node ${node} (${reason}): ${t?.n} packets ${f.src.text} -> ${f.dst.text}${port}`, evidence: lines };
  }
  if (fwd.length > 0 && replies.length === 0) {
    const syns = fwd.filter((x) => (x.flags & (SYN | ACK)) === SYN).length;
    const what = syns > 0 ? `${syns} SYNs got no SYN-ACK` : `${fwd.length} flows got no reply`;
    return { code: 'no-answer', node: fwd[0]?.node, summary: `${f.dst.text}${port} does not answer ${f.src.text}: ${what}, and no agent saw a drop (lost outside the nodes' kernels, or the reply takes another path)`, evidence: lines };
  }
  if (fwd.length > 0 || replies.length > 0) {
    return { code: 'reachable', summary: `${f.dst.text}${port} answers ${f.src.text}: traffic both ways, the last ${ago(f.nowMs, latest([...fwd, ...rev]))}`, evidence: lines };
  }
  if (f.agentsAnswered === 0) return noAgent(f, lines);
  return { code: 'no-traffic', summary: `no recent traffic between ${f.src.text} and ${f.dst.text}${port} in the agents' flows: try again while it fails`, evidence: lines };
}

/** Nothing could be asked: the first reason why (an agent without Hubble, a port-forward refused, no agent on the nodes). */
function noAgent(f: Findings, evidence: readonly string[]): Cause {
  const why = f.agentNotes.find((n) => !n.includes(' flows in ')) ?? 'no retina agent on the nodes involved';
  return { code: 'no-agent', summary: `no agent's flows could be read, so no cause can be named: ${why}`, evidence };
}

/** Flows SRC -> DST (to the port asked, if any) and DST -> SRC (from it). */
function flowsOf(f: Findings): { fwd: SeenFlow[]; rev: SeenFlow[] } {
  const portOk = (p: number): boolean => f.dstPorts.size === 0 || f.dstPorts.has(p);
  const fwd = f.flows.filter((x) => !x.dns && f.src.ips.has(x.srcIp) && f.dst.ips.has(x.dstIp) && portOk(x.dstPort));
  const rev = f.flows.filter((x) => !x.dns && f.dst.ips.has(x.srcIp) && f.src.ips.has(x.dstIp) && portOk(x.srcPort));
  return { fwd, rev };
}
