/**
 * `kubectl retina why SRC DST[:PORT]`'s logic (src/cli/why.ts keeps the flags and the printing):
 * SRC and DST through the API server (resolve.ts), the agents of their nodes asked for their recent
 * flows between them and SRC's DNS messages about DST (agents.ts), then the one most likely cause
 * with its evidence (cause.ts). Read only: nothing is created in the cluster, no traffic is sent.
 */
import type { HubbleProtoFiles } from '../flow/hubble/index.js';
import type { RestClient } from '../k8s/index.js';
import { agentFlows, findAgents, observerClient, type AgentAnswer, type FlowQuery, type HubbleTls } from './agents.js';
import { rankCause, type Cause, type ServiceFacts } from './cause.js';
import type { SeenFlow } from './flows.js';
import { podsByIp, ResolveError, resolveSide, selectingPolicies, type Side } from './resolve.js';
import type { TargetSpec } from './target.js';

export { parseTarget, targetText, TargetSpecError, type TargetSpec } from './target.js';
export { ResolveError } from './resolve.js';
export { rankCause, type Cause, type CauseCode, type Findings } from './cause.js';
export { readFlow, type SeenFlow } from './flows.js';
export type { HubbleTls } from './agents.js';

export interface WhyOptions {
  readonly client: RestClient;
  readonly protos: HubbleProtoFiles;
  readonly src: TargetSpec;
  readonly dst: TargetSpec;
  /** How far back flows count. */
  readonly windowMs: number;
  /** The last N matching flows asked of each agent. */
  readonly last: number;
  /** The whole answer's budget. */
  readonly timeoutMs: number;
  /** TLS to the agents' Hubble port (hubble.tls.enabled); plaintext without. */
  readonly tls?: HubbleTls;
  readonly signal?: AbortSignal;
}

export interface SideAnswer {
  readonly text: string;
  readonly ips: readonly string[];
  readonly nodes: readonly string[];
}

export interface WhyAnswer {
  readonly source: SideAnswer;
  readonly destination: SideAnswer & { readonly port?: number };
  readonly cause: Cause;
  readonly agents: readonly { readonly node: string; readonly pod: string; readonly flows: number; readonly tookMs: number; readonly error?: string }[];
  readonly flowsSeen: number;
  readonly tookMs: number;
}

const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function serviceFacts(dst: Side, port: number | undefined): { facts: ServiceFacts | undefined; dstPorts: Set<number> } {
  const s = dst.service;
  const dstPorts = new Set<number>(port === undefined ? [] : [port]);
  if (!s) return { facts: undefined, dstPorts };
  const asked = port === undefined ? undefined : s.ports.find((p) => p.port === port);
  if (asked) for (const t of s.targetPorts.get(asked.name) ?? []) dstPorts.add(t);
  const selector = s.selector ? `selector ${Object.entries(s.selector).map(([k, v]) => `${k}=${v}`).join(',')}` : undefined;
  return {
    dstPorts,
    facts: {
      text: `Service ${s.namespace}/${s.name}`, selector, selectedPods: s.selectedPods,
      ready: s.endpoints.filter((e) => e.ready).length, notReady: s.endpoints.filter((e) => !e.ready).length,
      ports: s.ports.map((p) => `${p.port}/${p.protocol}`), portMissing: port !== undefined && asked === undefined,
    },
  };
}

/** The flows between the two sides (both ways) and, for a name, SRC's DNS messages about it. */
function whitelist(srcIps: readonly string[], dstIps: readonly string[], name: string | undefined): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  if (dstIps.length > 0) out.push({ source_ip: srcIps, destination_ip: dstIps }, { source_ip: dstIps, destination_ip: srcIps });
  if (name !== undefined) {
    const q = [`^${escapeRegex(name)}\\.`];
    out.push({ source_ip: srcIps, dns_query: q }, { destination_ip: srcIps, dns_query: q });
  }
  return out;
}

export async function explainReach(o: WhyOptions): Promise<WhyAnswer> {
  const budget = AbortSignal.timeout(o.timeoutMs);
  try {
    return await explain(o, AbortSignal.any([budget, ...(o.signal ? [o.signal] : [])]));
  } catch (e) {
    if (budget.aborted && !o.signal?.aborted) throw new Error(`no answer within ${o.timeoutMs} ms (the API server or an agent too slow): ${(e as Error).message}`, { cause: e });
    throw e;
  }
}

async function explain(o: WhyOptions, signal: AbortSignal): Promise<WhyAnswer> {
  const t0 = Date.now();
  const deadlineMs = t0 + o.timeoutMs;
  const [src, dst] = await Promise.all([resolveSide(o.client, o.src, signal), resolveSide(o.client, o.dst, signal)]);
  if (src.ips.length === 0) throw new ResolveError(`${src.text} has no IP yet (not running?)`);
  if (dst.pod && dst.ips.length === 0) throw new ResolveError(`${dst.text} has no IP yet (not running?)`);
  const port = o.dst.port;
  const name = o.dst.kind === 'name' ? o.dst.name : undefined;
  const { facts, dstPorts } = serviceFacts(dst, port);
  const nodes = [...new Set([...src.nodes, ...dst.nodes])];
  const [agents, pol] = await Promise.all([findAgents(o.client, nodes, signal), selectingPolicies(o.client, src.pod, dst.pod, signal)]);
  const notes: string[] = [];
  for (const n of nodes) if (!agents.some((a) => a.node === n)) notes.push(`node ${n}: no running retina agent`);
  if (nodes.length === 0) notes.push('no node to ask: neither side is a pod or a Service with endpoints');
  if (pol.note) notes.push(pol.note);
  const Observer = observerClient(o.protos);
  const ask = async (dstIps: readonly string[]): Promise<AgentAnswer[]> => {
    const q: FlowQuery = { whitelist: whitelist(src.ips, dstIps, name), last: o.last, sinceMs: t0 - o.windowMs, deadlineMs };
    return Promise.all(agents.map((a) => agentFlows(o.client, Observer, a, q, o.tls, signal)));
  };
  let answers = await ask(dst.ips);
  let flows: SeenFlow[] = answers.flatMap((a) => [...a.flows]);
  let dstIps = dst.ips;
  if (name !== undefined) {
    // what SRC was told the name is: its DNS answers' addresses, then the flows to them
    const told = new Set(flows.flatMap((f) => (f.dns?.response && f.dns.rcode === 0 && src.ips.includes(f.dstIp) && f.dns.query.startsWith(`${name}.`) ? f.dns.ips : [])));
    if (told.size > 0) {
      dstIps = [...told];
      const more = await ask(dstIps);
      answers = answers.map((a, i) => ({ ...a, flows: [...a.flows, ...(more[i]?.flows ?? [])], tookMs: a.tookMs + (more[i]?.tookMs ?? 0), ...(a.error || more[i]?.error ? { error: a.error ?? more[i]?.error } : {}) }));
      flows = answers.flatMap((a) => [...a.flows]);
    }
  }
  // DNS servers the agents could not name (a pod their cache does not hold), named by the API server
  const unnamed = name === undefined ? [] : [...new Set(flows.filter((f) => f.dns?.response && !f.srcPod && src.ips.includes(f.dstIp)).map((f) => f.srcIp))];
  const podNames = unnamed.length > 0 ? await podsByIp(o.client, unnamed, signal) : undefined;
  for (const a of answers) notes.push(a.error ? `agent of node ${a.agent.node}: ${a.error}` : `agent ${a.agent.namespace}/${a.agent.pod} (node ${a.agent.node}): ${a.flows.length} flows in ${a.tookMs} ms`);
  for (const a of answers) {
    if (!a.error && a.calls !== a.agent.node) {
      notes.push(`node ${a.agent.node}: the Hubble server on port ${a.agent.port} of ${a.agent.namespace}/${a.agent.pod} calls itself ${a.calls === undefined ? 'nothing (not a retina agent\'s: another Hubble, such as Cilium\'s, may hold the port)' : `node ${JSON.stringify(a.calls)} (an agent without its NODE_NAME, or another process holding the port on the node)`}`);
    }
  }
  const dstText = name !== undefined && dstIps.length > 0 ? `${dst.text} (${dstIps.join(', ')})` : dst.text;
  const cause = rankCause({
    src: { text: src.text, ips: new Set(src.ips) }, dst: { text: dstText, ips: new Set(dstIps) }, port, dstPorts, flows,
    policies: pol.policies, service: facts, dnsName: name, agentNotes: notes, agentsAnswered: answers.filter((a) => !a.error).length, ...(podNames ? { podNames } : {}), nowMs: Date.now(),
  });
  return {
    source: { text: src.text, ips: src.ips, nodes: src.nodes },
    destination: { text: dstText, ips: dstIps, nodes: dst.nodes, ...(port === undefined ? {} : { port }) },
    cause,
    agents: answers.map((a) => ({ node: a.agent.node, pod: `${a.agent.namespace}/${a.agent.pod}`, flows: a.flows.length, tookMs: a.tookMs, ...(a.error ? { error: a.error } : {}) })),
    flowsSeen: flows.length,
    tookMs: Date.now() - t0,
  };
}
