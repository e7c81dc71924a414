/**
 * The cause ranking over flows of known content: each made as a plugin makes it (createFlow), then
 * as the agent sends it (toHubbleFlow, the Hubble shape GetFlows carries), then read as `why` reads it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFlow, type Flow } from '../flow/index.js';
import { toHubbleFlow } from '../flow/hubble/index.js';
import { rankCause, type Findings } from './cause.js';
import { readFlow, type SeenFlow } from './flows.js';

const NOW = 1_800_000_000_000;
const CLI = '10.251.0.5';
const SRV = '10.251.0.6';
const DNS = '10.252.0.10';
const NODE = 'node-a';

type Init = Partial<Flow> & Pick<Flow, 'srcIp' | 'dstIp' | 'verdict'>;
/** A flow as the agent on `node` serves it, `agoMs` before NOW. */
const seen = (init: Init, agoMs: number, node = NODE): SeenFlow => readFlow(toHubbleFlow(createFlow({ ...init, timeMs: NOW - agoMs }), node), node);
const syn = (agoMs: number, port = 8080): SeenFlow => seen({ srcIp: CLI, dstIp: SRV, verdict: 'FORWARDED', proto: 6, srcPort: 40000, dstPort: port, tcpFlags: 2 }, agoMs);
const synAck = (agoMs: number, port = 8080): SeenFlow => seen({ srcIp: SRV, dstIp: CLI, verdict: 'FORWARDED', proto: 6, srcPort: port, dstPort: 40000, tcpFlags: 18, isReply: true }, agoMs);
const rst = (agoMs: number, port = 8080): SeenFlow => seen({ srcIp: SRV, dstIp: CLI, verdict: 'FORWARDED', proto: 6, srcPort: port, dstPort: 40000, tcpFlags: 20, isReply: true }, agoMs);
const drop = (reason: string, agoMs: number, port = 8080, node = NODE): SeenFlow => seen({ srcIp: CLI, dstIp: SRV, verdict: 'DROPPED', dropReason: reason, proto: 6, srcPort: 40000, dstPort: port, tcpFlags: 2 }, agoMs, node);
const COREDNS = Object.freeze({ namespace: 'kube-system', podName: 'coredns-1', workloadKind: 'Deployment', workloadName: 'coredns', service: 'kube-dns', nodeName: NODE, zone: '', labels: {} });
const dns = (query: string, response: boolean, rcode: string, answers: string[], agoMs: number): SeenFlow => seen({
  source: response ? COREDNS : undefined,
  srcIp: response ? DNS : CLI, dstIp: response ? CLI : DNS, verdict: 'DNS', proto: 17, srcPort: response ? 53 : 50000, dstPort: response ? 50000 : 53,
  dns: { query, qtype: 'A', rcode, answers, isResponse: response, numAnswers: answers.length },
}, agoMs);

function findings(flows: SeenFlow[], o: Partial<Findings> = {}): Findings {
  return {
    src: { text: 'pod a/cli', ips: new Set([CLI]) }, dst: { text: 'pod b/srv', ips: new Set([SRV]) }, port: 8080, dstPorts: new Set([8080]),
    flows, policies: [], service: undefined, dnsName: undefined, agentNotes: [], agentsAnswered: 1, nowMs: NOW, ...o,
  };
}

describe('why: the cause ranking', () => {
  it('netfilter drops name the node and the reason', () => {
    const c = rankCause(findings([syn(9000), synAck(8900), drop('NETFILTER_DROP', 3000), drop('NETFILTER_DROP', 2000, 8080, 'node-b'), drop('NETFILTER_DROP', 1000)]));
    assert.equal(c.code, 'netfilter-drop');
    assert.equal(c.node, NODE);
    assert.match(c.summary, /^dropped by netfilter on node node-a \(NETFILTER_DROP\): 2 packets pod a\/cli -> pod b\/srv port 8080, the last 1\.0 s ago$/);
    assert.ok(c.evidence.some((e) => e.startsWith('node node-a: ') && e.includes('dropped 2 (NETFILTER_DROP)')), c.evidence.join('\n'));
  });

  it('with a NetworkPolicy selecting the pods, the netfilter drop is named as policy', () => {
    const c = rankCause(findings([drop('NETFILTER_DROP', 1000)], { policies: ['b/deny-all (ingress)'] }));
    assert.equal(c.code, 'policy');
    assert.match(c.summary, /NetworkPolicy b\/deny-all \(ingress\)/);
  });

  it('a reset from the destination is no listener on the port; so is NO_SOCKET alone', () => {
    const c = rankCause(findings([syn(2000, 8081), rst(1999, 8081), drop('NO_SOCKET', 1999, 8081)], { port: 8081, dstPorts: new Set([8081]) }));
    assert.equal(c.code, 'no-listener');
    assert.equal(c.summary, 'no listener on port 8081 of pod b/srv: it answered 1 times with RST');
    const d = rankCause(findings([drop('NO_SOCKET', 500, 9999)], { port: 9999, dstPorts: new Set([9999]) }));
    assert.equal(d.code, 'no-listener');
    assert.match(d.summary, /NO_SOCKET/);
  });

  it('flows to other ports do not count when a port is asked', () => {
    const c = rankCause(findings([drop('NETFILTER_DROP', 1000, 9999), syn(500), synAck(499)]));
    assert.equal(c.code, 'reachable');
  });

  it('a reply after the last drop: reachable now, the earlier drops mentioned', () => {
    const c = rankCause(findings([drop('NETFILTER_DROP', 5000), syn(1000), synAck(900)]));
    assert.equal(c.code, 'reachable');
    assert.match(c.summary, /earlier, 1 drops and 0 resets/);
  });

  it('routing drop reasons are no route; other reasons are named as they are', () => {
    assert.equal(rankCause(findings([drop('IP_NOROUTE', 100)])).code, 'no-route');
    const c = rankCause(findings([drop('TCP_CSUM', 100)]));
    assert.equal(c.code, 'dropped');
    assert.match(c.summary, /^dropped on node node-a \(TCP_CSUM\)/);
  });

  it('SYNs without an answer and without a drop: no answer; nothing at all: no traffic', () => {
    const c = rankCause(findings([syn(3000), syn(2000), syn(1000)]));
    assert.equal(c.code, 'no-answer');
    assert.match(c.summary, /3 SYNs got no SYN-ACK/);
    assert.equal(rankCause(findings([])).code, 'no-traffic');
  });

  it('no agent answered: said so, with the first reason, rather than "no traffic"', () => {
    const c = rankCause(findings([], { agentsAnswered: 0, agentNotes: ['agent of node node-a: agent kube-system/a serves no Hubble port (hubble.enabled is off)'] }));
    assert.equal(c.code, 'no-agent');
    assert.equal(c.summary, 'no agent\'s flows could be read, so no cause can be named: agent of node node-a: agent kube-system/a serves no Hubble port (hubble.enabled is off)');
    const svc = { text: 'Service b/web', selector: 'selector app=web', ready: 0, notReady: 0, selectedPods: 0, ports: ['80/TCP'], portMissing: false };
    assert.equal(rankCause(findings([], { agentsAnswered: 0, service: svc })).code, 'service-no-endpoints', 'what the API alone says still counts');
  });

  it('NXDOMAIN for every search-path expansion of a name', () => {
    const name = 'nosuch.b.svc.cluster.local';
    const flows = [
      dns(`${name}.a.svc.cluster.local`, false, '', [], 3000), dns(`${name}.a.svc.cluster.local`, true, 'NXDOMAIN', [], 2990),
      dns(name, false, '', [], 2000), dns(name, true, 'NXDOMAIN', [], 1990),
      dns('other.example', true, 'NOERROR', ['192.0.2.1'], 1000),
    ];
    const c = rankCause(findings(flows, { dnsName: name, dst: { text: `name ${name}`, ips: new Set() }, port: 80, dstPorts: new Set([80]) }));
    assert.equal(c.code, 'nxdomain');
    assert.equal(c.summary, `NXDOMAIN for name ${name}: the DNS server (pod kube-system/coredns-1, ${DNS}) says it does not exist`);
    assert.ok(c.evidence.some((e) => e.includes('2 answers NXDOMAIN')), c.evidence.join('\n'));
    const unnamed = flows.map((x) => ({ ...x, srcPod: '' }));
    assert.match(rankCause(findings(unnamed, { dnsName: name, dst: { text: `name ${name}`, ips: new Set() }, podNames: new Map([[DNS, 'kube-system/coredns-2']]) })).summary, /the DNS server \(pod kube-system\/coredns-2, 10\.252\.0\.10\)/);
  });

  it('a name that resolves hands over to its addresses; SERVFAIL is a DNS error', () => {
    const name = 'srv.b.svc.cluster.local';
    const ok = rankCause(findings([dns(name, true, 'NOERROR', [SRV], 3000), syn(2000), drop('NETFILTER_DROP', 1000)], { dnsName: name }));
    assert.equal(ok.code, 'netfilter-drop');
    const bad = rankCause(findings([dns(name, true, 'SERVFAIL', [], 1000)], { dnsName: name, dst: { text: `name ${name}`, ips: new Set() } }));
    assert.equal(bad.code, 'dns-error');
    assert.match(bad.summary, /answers SERVFAIL$/);
  });

  it('a Service with no ready endpoint comes before the flows; a port it does not have before that', () => {
    const service = { text: 'Service b/web', selector: 'selector app=web', ready: 0, notReady: 0, selectedPods: 0, ports: ['80/TCP'], portMissing: false };
    const c = rankCause(findings([drop('NETFILTER_DROP', 1000, 80)], { service, port: 80, dstPorts: new Set([80]) }));
    assert.equal(c.code, 'service-no-endpoints');
    assert.equal(c.summary, 'Service b/web has no endpoints: its selector app=web matches no pod');
    const notReady = rankCause(findings([], { service: { ...service, notReady: 2, selectedPods: 2 } }));
    assert.equal(notReady.summary, 'Service b/web has no endpoints: its selector app=web matches 2 pods, none ready');
    const port = rankCause(findings([], { service: { ...service, ready: 1, portMissing: true }, port: 81 }));
    assert.equal(port.code, 'service-port');
    assert.equal(port.summary, 'Service b/web has no port 81 (its ports: 80/TCP)');
  });
});
