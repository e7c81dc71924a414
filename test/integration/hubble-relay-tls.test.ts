/**
 * Hubble with TLS as Cilium runs it: two agents' Hubble servers (in this process, over real rings)
 * serve mutual TLS with a certificate for `*.default.hubble-grpc.cilium.io` and a client CA; the real
 * Hubble Relay (Cilium v1.18.4, hack/hubble/build.sh) reaches them with its client certificate, the
 * names coming from the Peer service (`<node>.default.hubble-grpc.cilium.io`, and
 * `hubble-peer.default.hubble-grpc.cilium.io` for the peer service itself), and the real hubble CLI
 * (both pins, v1.18.4 and v1.19.7) reads flows and namespaces through it and from an agent directly. Clients without a certificate,
 * or with one another CA signed, are refused; GetFlows stays on the raw-writes path under TLS.
 * Certificates come from the openssl CLI (test/fixtures/certs.ts). Needs the hubble tools; never skips.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { createFlow, type Endpoint, type Flow } from '../../src/flow/index.js';
import { createLogger } from '../../src/log/index.js';
import { createFlowRing, hubbleServerCredentials, loadHubbleProtos, startHubbleServer, type FlowRing, type HubbleServer } from '../../src/server/hubble/index.js';
import { ROOT, freePort } from '../e2e/agent-process.js';
import { probeRawStream } from '../fakes/hubble-probe.js';
import { makeCa, makeLeaf, type Ca, type Leaf } from '../fixtures/certs.js';
import { eventually } from './harness.js';
import { HUBBLE_CLIS, hubble, hubbleTools } from './hubble-tools.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const protos = loadHubbleProtos(`${ROOT}proto/hubble`);
const log = createLogger({ level: 'error', component: 'test' });
const HOST = '127.0.45.31';

const ep = (namespace: string): Endpoint => Object.freeze({ namespace, podName: `${namespace}-pod`, workloadKind: '', workloadName: '', service: '', nodeName: '', zone: '', labels: {} });
const flowsOf = (node: number, n: number): Flow[] => Array.from({ length: n }, (_, i) => Object.assign(
  createFlow({ srcIp: `10.0.${node}.${i + 1}`, dstIp: '10.0.9.9', verdict: 'FORWARDED', proto: 6, srcPort: 1000 + i, dstPort: 80, tcpFlags: 2, timeMs: Date.now() - 1000 + i }),
  { source: ep(`ns-node${node}`), destination: ep('shared') },
));

/** Unary call on a grpc-js client; the error's code when it fails. */
function status(client: Obj): Promise<number> {
  return new Promise((resolve) => client['ServerStatus']({}, (e: grpc.ServiceError | null) => resolve(e ? e.code : grpc.status.OK)));
}

describe('Hubble over mutual TLS: the agents, the real Hubble Relay and the real hubble CLI', { timeout: 180_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'hubble-tls-'));
  let tools = '';
  let ca: Ca;
  let server: Leaf;
  let relayClient: Leaf;
  let rogue: Leaf;
  const rings: FlowRing[] = [createFlowRing(100), createFlowRing(100)];
  const servers: HubbleServer[] = [];
  const peers: { name: string; address: string }[] = [];
  let relay: ChildProcess | undefined;
  let relayLog = '';
  let relayAddr = '';
  const clientTls = (): string[] => ['--tls', '--tls-ca-cert-files', ca.cert, '--tls-client-cert-file', relayClient.cert, '--tls-client-key-file', relayClient.key];

  before(async () => {
    tools = hubbleTools();
    ca = makeCa(dir, 'hubble');
    // As Cilium's certgen makes them: the server's for every node of the cluster, the relay's a client certificate of the same CA.
    server = makeLeaf(dir, ca, 'hubble-server', { san: 'DNS:*.default.hubble-grpc.cilium.io', usage: 'serverAuth,clientAuth' });
    relayClient = makeLeaf(dir, ca, 'hubble-relay-client', { san: 'DNS:hubble-relay-client', usage: 'clientAuth' });
    rogue = makeLeaf(dir, makeCa(dir, 'other'), 'rogue-client', { san: 'DNS:rogue', usage: 'clientAuth' });
    for (const [i, ring] of rings.entries()) {
      const s = await startHubbleServer({
        protos, ring, listen: { host: HOST, port: 0 }, nodeName: `node-${i}`, version: 'test', log,
        peers: { list: () => peers, subscribe: () => ({ [Symbol.dispose]: () => undefined }) },
        tls: { certFile: server.cert, keyFile: server.key, clientCAFiles: [ca.cert] },
      });
      servers.push(s);
      peers.push({ name: `node-${i}`, address: `${HOST}:${s.port}` });
      ring.consume({ source: 'test', flows: flowsOf(i, 5) });
    }
  });

  after(async () => {
    relay?.kill('SIGKILL');
    for (const s of servers) await s[Symbol.asyncDispose]();
    rmSync(dir, { recursive: true, force: true });
  });

  const grpcClient = (leaf: Leaf | undefined): Obj => new protos.ObserverClient(
    peers[0]!.address,
    grpc.credentials.createSsl(readFileSync(ca.cert), leaf ? readFileSync(leaf.key) : null, leaf ? readFileSync(leaf.cert) : null),
    { 'grpc.ssl_target_name_override': 'node-0.default.hubble-grpc.cilium.io' },
  ) as unknown as Obj;

  it('refuses a client without a certificate, or with one another CA signed; serves one the client CA signed', async () => {
    for (const [leaf, want] of [[undefined, grpc.status.UNAVAILABLE], [rogue, grpc.status.UNAVAILABLE], [relayClient, grpc.status.OK]] as const) {
      const c = grpcClient(leaf);
      try {
        assert.equal(await status(c), want, `client certificate ${leaf ? leaf.cert : 'none'}`);
      } finally {
        c['close']();
      }
    }
    const plain = new protos.ObserverClient(peers[0]!.address, grpc.credentials.createInsecure()) as unknown as Obj;
    try {
      assert.equal(await status(plain), grpc.status.UNAVAILABLE, 'plaintext to a TLS server');
    } finally {
      plain['close']();
    }
  });

  it('Peer Notify gives each peer its TLS name (<node>.<cluster>.hubble-grpc.cilium.io)', async () => {
    const pc = new protos.PeerClient(peers[0]!.address, grpc.credentials.createSsl(readFileSync(ca.cert), readFileSync(relayClient.key), readFileSync(relayClient.cert)),
      { 'grpc.ssl_target_name_override': 'hubble-peer.default.hubble-grpc.cilium.io' }) as unknown as Obj;
    try {
      const got: Obj[] = await new Promise((resolve, reject) => {
        const call = pc['Notify']({});
        const msgs: Obj[] = [];
        call.on('data', (m: Obj) => {
          msgs.push(m);
          if (msgs.length === 2) {
            call.cancel();
            resolve(msgs);
          }
        });
        call.on('error', (e: grpc.ServiceError) => (e.code === grpc.status.CANCELLED ? undefined : reject(e)));
      });
      assert.deepEqual(got.map((m) => m['tls']), [{ server_name: 'node-0.default.hubble-grpc.cilium.io' }, { server_name: 'node-1.default.hubble-grpc.cilium.io' }]);
    } finally {
      pc['close']();
    }
  });

  it('GetFlows stays on the raw-writes path under TLS (the HTTP/2 stream is reachable)', async () => {
    const creds = hubbleServerCredentials({ certFile: server.cert, keyFile: server.key, clientCAFiles: [ca.cert] }, log);
    try {
      const { found, error } = await probeRawStream(protos, HOST, creds.credentials,
        grpc.credentials.createSsl(readFileSync(ca.cert), readFileSync(relayClient.key), readFileSync(relayClient.cert)),
        { 'grpc.ssl_target_name_override': 'node-0.default.hubble-grpc.cilium.io' });
      assert.equal(error, undefined);
      assert.ok(found !== undefined, 'rawStreamOf found no HTTP/2 stream under TLS');
    } finally {
      creds[Symbol.dispose]();
    }
  });

  it('a TLS file that cannot be read, or is empty, fails the server\'s start naming the file and the key', async () => {
    const empty = join(dir, 'empty.crt');
    copyFileSync('/dev/null', empty);
    assert.throws(() => hubbleServerCredentials({ certFile: join(dir, 'nope.crt'), keyFile: server.key, clientCAFiles: [] }, log), /certificate file \(hubble\.tls\.certFile\) .*nope\.crt/);
    assert.throws(() => hubbleServerCredentials({ certFile: server.cert, keyFile: server.key, clientCAFiles: [ca.cert, empty] }, log), /client CA file \(hubble\.tls\.clientCAFiles\) .*empty\.crt is empty/);
    await assert.rejects(startHubbleServer({
      protos, ring: createFlowRing(1), listen: { host: HOST, port: 0 }, nodeName: 'x', version: 'test', log,
      peers: { list: () => [], subscribe: () => ({ [Symbol.dispose]: () => undefined }) }, tls: { certFile: server.cert, keyFile: join(dir, 'nope.key'), clientCAFiles: [] },
    }), /key file \(hubble\.tls\.keyFile\)/);
  });

  it('a rotated certificate (and client CA) is served to new connections without a restart', async () => {
    const key = join(dir, 'rot.key');
    const cert = join(dir, 'rot.crt');
    const clientCa = join(dir, 'rot-client-ca.crt');
    const ca2 = makeCa(dir, 'rotated');
    const first = makeLeaf(dir, ca, 'rot-1', { san: 'DNS:*.default.hubble-grpc.cilium.io', usage: 'serverAuth,clientAuth' });
    const second = makeLeaf(dir, ca2, 'rot-2', { san: 'DNS:*.default.hubble-grpc.cilium.io', usage: 'serverAuth,clientAuth' });
    const client2 = makeLeaf(dir, ca2, 'rot-client-2', { san: 'DNS:c2', usage: 'clientAuth' });
    const put = (leaf: Leaf, clientCaFile: string): void => {
      copyFileSync(leaf.cert, cert);
      copyFileSync(leaf.key, key);
      copyFileSync(clientCaFile, clientCa);
    };
    put(first, ca.cert);
    const creds = hubbleServerCredentials({ certFile: cert, keyFile: key, clientCAFiles: [clientCa] }, log, 100);
    const probe = new grpc.Server();
    probe.addService(protos.observer, { ServerStatus: (_c: unknown, cb: grpc.sendUnaryData<Obj>) => cb(null, { version: 'probe' }) });
    const port = await new Promise<number>((res, rej) => probe.bindAsync(`${HOST}:0`, creds.credentials, (e, p) => (e ? rej(e) : res(p))));
    const ask = async (trust: string, leaf: Leaf): Promise<number> => {
      const c = new protos.ObserverClient(`${HOST}:${port}`, grpc.credentials.createSsl(readFileSync(trust), readFileSync(leaf.key), readFileSync(leaf.cert)),
        { 'grpc.ssl_target_name_override': 'node-0.default.hubble-grpc.cilium.io' }) as unknown as Obj;
      try {
        return await status(c);
      } finally {
        c['close']();
      }
    };
    try {
      assert.equal(await ask(ca.cert, relayClient), grpc.status.OK, 'before: the first CA\'s server and clients');
      assert.equal(await ask(ca2.cert, client2), grpc.status.UNAVAILABLE, 'before: the second CA is not trusted yet');
      put(second, ca2.cert);
      await eventually('the rotated certificate served', 10_000, async () => (await ask(ca2.cert, client2)) === grpc.status.OK || undefined, 200);
      assert.equal(await ask(ca.cert, relayClient), grpc.status.UNAVAILABLE, 'after: the first CA\'s server certificate and clients are gone');
    } finally {
      probe.forceShutdown();
      creds[Symbol.dispose]();
    }
  });

  for (const cli of HUBBLE_CLIS) it(`the real hubble CLI reads an agent directly over mutual TLS (${cli.label})`, async () => {
    const out = await hubble(hubbleTools(cli.pin), ['observe', '--server', peers[1]!.address, ...clientTls(), '--tls-server-name', 'node-1.default.hubble-grpc.cilium.io', '--last', '3', '-o', 'json']);
    const flows = out.trim().split('\n').map((l) => JSON.parse(l) as Obj).map((m) => m['flow'] as Obj);
    assert.equal(flows.length, 3);
    assert.ok(flows.every((f) => f['node_name'] === 'node-1' && f['source']['namespace'] === 'ns-node1'));
  });

  const startRelay = async (): Promise<void> => {
    const port = await freePort();
    relayAddr = `${HOST}:${port}`;
    relay = spawn(join(tools, 'hubble-relay'), ['serve', '--peer-service', peers[0]!.address, '--disable-server-tls',
      '--tls-hubble-server-ca-files', ca.cert, '--tls-hubble-client-cert-file', relayClient.cert, '--tls-hubble-client-key-file', relayClient.key,
      '--listen-address', relayAddr, '--health-listen-address', `${HOST}:${await freePort()}`, '--gops=false', '--retry-timeout', '2s'], { stdio: ['ignore', 'pipe', 'pipe'] });
    relay.stdout?.on('data', (d: Buffer) => (relayLog += d.toString()));
    relay.stderr?.on('data', (d: Buffer) => (relayLog += d.toString()));
  };

  // One relay (v1.18.4), read by each CLI.
  for (const cli of HUBBLE_CLIS) it(`the real Hubble Relay reaches both agents over mutual TLS: flows, nodes and namespaces of both (${cli.label})`, async () => {
    if (relay === undefined) await startRelay();
    const cliTools = hubbleTools(cli.pin);
    const fail = (e: Error): never => {
      throw new Error(`${e.message}\nrelay log:\n${relayLog.slice(-3000)}`);
    };
    const nodes = await eventually('both agents connected to the relay', 30_000, async () => {
      const out = await hubble(cliTools, ['list', 'nodes', '--server', relayAddr, '-o', 'json']);
      const list = JSON.parse(out) as Obj[];
      return list.filter((n) => n['state'] === 'NODE_CONNECTED' && n['tls']?.['enabled'] === true).length === 2 ? list : undefined;
    }, 1000).catch(fail);
    assert.deepEqual(nodes.map((n) => n['tls']['server_name']).sort(), ['node-0.default.hubble-grpc.cilium.io', 'node-1.default.hubble-grpc.cilium.io']);
    const out = await hubble(cliTools, ['observe', '--server', relayAddr, '--last', '20', '-o', 'json']).catch(fail);
    const flows = out.trim().split('\n').map((l) => JSON.parse(l) as Obj).filter((m) => m['flow']).map((m) => m['flow'] as Obj);
    assert.equal(flows.length, 10, 'five flows of each agent');
    assert.deepEqual([...new Set(flows.map((f) => f['node_name']))].sort(), ['node-0', 'node-1']);
    const ns = JSON.parse(await hubble(cliTools, ['list', 'namespaces', '--server', relayAddr, '-o', 'json'])) as Obj[];
    assert.deepEqual(ns, [{ cluster: 'default', namespace: 'ns-node0' }, { cluster: 'default', namespace: 'ns-node1' }, { cluster: 'default', namespace: 'shared' }]);
  });
});
