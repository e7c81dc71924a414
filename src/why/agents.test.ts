/**
 * One agent asked as `why` asks it, end to end below the API server: a real Hubble server (this
 * process, a real ring, mutual TLS with a certificate for `*.default.hubble-grpc.cilium.io` as
 * Cilium's certgen makes it), reached through a stand-in API server that speaks the WebSocket
 * port-forward (v4.channel.k8s.io) to its port. GetFlows' filters, the flows read back with their
 * drop reason, the node named as the API server names the agent's (not as the agent named itself),
 * the agent's TLS name verified; without our certificate, or in plaintext, the agent's
 * error is the answer's, not a throw.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { makeCa, makeLeaf, type Ca, type Leaf } from '../../test/fixtures/certs.js';
import { hubbleProtoFiles } from '../flow/hubble/index.js';
import { createFlow } from '../flow/index.js';
import { createRestClient, type RestClient } from '../k8s/index.js';
import { parseFrame } from '../k8s/websocket.js';
import { createLogger } from '../log/index.js';
import { createFlowRing, loadHubbleProtos, startHubbleServer, type HubbleServer } from '../server/hubble/index.js';
import { packageFile } from '../cli/command.js';
import { agentFlows, observerClient, type AgentRef, type HubbleTls } from './agents.js';

const frame = (ch: number, data: Buffer): Buffer => {
  const p = Buffer.concat([Buffer.from([ch]), data]);
  const head = p.length < 126 ? Buffer.from([0x82, p.length]) : p.length < 65_536 ? Buffer.from([0x82, 126, p.length >> 8, p.length & 0xff]) : Buffer.alloc(10);
  if (p.length >= 65_536) {
    head[0] = 0x82;
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(p.length), 2);
  }
  return Buffer.concat([head, p]);
};

describe('why: an agent\'s flows through a port-forward, over mutual TLS', { timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'why-agents-'));
  const protoDir = packageFile('proto/hubble');
  let ca: Ca;
  let mine: Leaf;
  let hubble: HubbleServer;
  let api: Server;
  let client: RestClient;
  const sockets: Duplex[] = [];
  const agent: AgentRef = { node: 'node-a', namespace: 'kube-system', pod: 'retina-agent-x', port: 4244 };
  const Observer = observerClient(hubbleProtoFiles(protoDir, ['observer.proto']));
  const now = Date.now();

  before(async () => {
    ca = makeCa(dir, 'hubble');
    const server = makeLeaf(dir, ca, 'hubble-server', { san: 'DNS:*.default.hubble-grpc.cilium.io', usage: 'serverAuth,clientAuth' });
    mine = makeLeaf(dir, ca, 'why-client', { san: 'DNS:why-client', usage: 'clientAuth' });
    const ring = createFlowRing(100);
    ring.consume({ source: 'test', flows: [
      createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', proto: 6, srcPort: 40000, dstPort: 8080, tcpFlags: 2, timeMs: now - 2000, nodeName: 'vm' }),
      createFlow({ srcIp: '10.0.0.9', dstIp: '10.0.0.2', verdict: 'FORWARDED', proto: 6, srcPort: 40001, dstPort: 8080, tcpFlags: 2, timeMs: now - 1000, nodeName: 'node-a' }),
    ] });
    hubble = await startHubbleServer({
      protos: loadHubbleProtos(protoDir), ring, listen: { host: '127.0.0.1', port: 0 }, nodeName: 'node-a', version: 'test',
      log: createLogger({ level: 'error', component: 'test' }), peers: { list: () => [], subscribe: () => ({ [Symbol.dispose]: () => undefined }) },
      tls: { certFile: server.cert, keyFile: server.key, clientCAFiles: [ca.cert] },
    });
    // the API server's side of `pods/portforward`: the pod's port is the Hubble server's
    api = createServer((_q, res) => res.writeHead(404).end());
    api.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
      sockets.push(socket);
      assert.equal(req.url, '/api/v1/namespaces/kube-system/pods/retina-agent-x/portforward?ports=4244');
      const accept = createHash('sha1').update(`${String(req.headers['sec-websocket-key'])}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n`);
      const port = Buffer.from([4244 & 0xff, 4244 >> 8]);
      socket.write(Buffer.concat([frame(0, port), frame(1, port)]));
      const pod = connect(hubble.port, '127.0.0.1');
      sockets.push(pod);
      pod.on('data', (d: Buffer) => socket.write(frame(0, d)));
      pod.on('close', () => socket.destroy());
      pod.on('error', () => socket.destroy());
      let buf = Buffer.alloc(0);
      socket.on('data', (c: Buffer) => {
        buf = Buffer.concat([buf, c]);
        for (let f = parseFrame(buf); f; f = parseFrame(buf)) {
          buf = buf.subarray(f.end);
          if (f.opcode === 0x8) pod.destroy();
          else if (f.payload[0] === 0) pod.write(f.payload.subarray(1));
        }
      });
      socket.on('close', () => pod.destroy());
      socket.on('error', () => pod.destroy());
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    client = createRestClient({ server: `http://127.0.0.1:${(api.address() as AddressInfo).port}`, source: 'test', authorize: async () => undefined });
  });

  after(async () => {
    client?.close();
    for (const s of sockets) s.destroy();
    api?.closeAllConnections();
    await new Promise<void>((r) => (api ? api.close(() => r()) : r()));
    await hubble?.[Symbol.asyncDispose]();
    rmSync(dir, { recursive: true, force: true });
  });

  const query = { whitelist: [{ source_ip: ['10.0.0.1'], destination_ip: ['10.0.0.2'] }], last: 100, sinceMs: now - 60_000, deadlineMs: Date.now() + 20_000 };
  const tls = (o: Partial<HubbleTls> = {}): HubbleTls => ({ ca: readFileSync(ca.cert), cert: readFileSync(mine.cert), key: readFileSync(mine.key), clusterName: 'default', ...o });

  it('reads the filtered flows, the drop reason included, verifying node-a.default.hubble-grpc.cilium.io', async () => {
    const a = await agentFlows(client, Observer, agent, { ...query, deadlineMs: Date.now() + 20_000 }, tls());
    assert.equal(a.error, undefined);
    assert.equal(a.calls, 'node-a', 'the Hubble server names its node (GetNodes)');
    assert.equal(a.flows.length, 1, 'only the flow the filter names');
    const [f] = a.flows;
    assert.deepEqual({ src: f?.srcIp, dst: f?.dstIp, port: f?.dstPort, dropped: f?.dropped, reason: f?.dropReason, node: f?.node }, { src: '10.0.0.1', dst: '10.0.0.2', port: 8080, dropped: true, reason: 'NETFILTER_DROP', node: 'node-a' });
  });

  it('another cluster name (the certificate does not name it), no client certificate, or plaintext: the agent\'s error, no flows', async () => {
    for (const t of [tls({ clusterName: 'other' }), tls({ cert: undefined, key: undefined }), undefined]) {
      const a = await agentFlows(client, Observer, agent, { ...query, deadlineMs: Date.now() + 10_000 }, t);
      assert.equal(a.flows.length, 0);
      assert.match(a.error ?? '', /^agent kube-system\/retina-agent-x on node node-a: /);
    }
    const off = await agentFlows(client, Observer, { ...agent, port: undefined }, query, undefined);
    assert.match(off.error ?? '', /serves no Hubble port \(hubble\.enabled is off\)/);
  });
});
