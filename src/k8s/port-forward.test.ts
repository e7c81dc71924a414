/**
 * openPortForward and forwardLocally against a local server that speaks the API server's side of a
 * WebSocket port-forward (v4.channel.k8s.io: each channel opened with the port, data on 0, errors
 * on 1): the request (path, ports, protocol, credentials), bytes both ways through masked client
 * frames of every length class, an error on channel 1 as the stream's error, a refused upgrade.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { forwardLocally, openPortForward } from './port-forward.js';
import { isApiError, type RestConfig } from './rest.js';
import { parseFrame } from './websocket.js';

function serverFrame(payload: Buffer): Buffer {
  const len = payload.length;
  const head = len < 126 ? Buffer.from([0x82, len]) : len < 65_536 ? Buffer.alloc(4) : Buffer.alloc(10);
  if (len >= 126 && len < 65_536) {
    head[0] = 0x82;
    head[1] = 126;
    head.writeUInt16BE(len, 2);
  } else if (len >= 65_536) {
    head[0] = 0x82;
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(len), 2);
  }
  return Buffer.concat([head, payload]);
}
const onChannel = (ch: number, data: Buffer): Buffer => serverFrame(Buffer.concat([Buffer.from([ch]), data]));

describe('port-forward over a WebSocket', () => {
  let server: Server;
  let config: RestConfig;
  const seen: { url?: string; protocols?: string; auth?: string; masked: boolean[] } = { masked: [] };
  const sockets: Duplex[] = [];

  before(async () => {
    server = createServer((_req, res) => {
      res.writeHead(403, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', reason: 'Forbidden', message: 'pods "x" is forbidden: cannot create resource "pods/portforward"' }));
    });
    server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
      sockets.push(socket);
      seen.url = req.url;
      seen.protocols = String(req.headers['sec-websocket-protocol']);
      seen.auth = req.headers.authorization;
      if (req.url?.includes('/pods/refused/')) {
        socket.end('HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n\r\n{"kind":"Status","reason":"Forbidden","message":"no"}');
        return;
      }
      const accept = createHash('sha1').update(`${String(req.headers['sec-websocket-key'])}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n`);
      const port = Buffer.alloc(2);
      port.writeUInt16LE(4244);
      socket.write(onChannel(0, port));
      socket.write(onChannel(1, port));
      if (req.url?.includes('/pods/closed/')) {
        socket.end(onChannel(1, Buffer.from('failed to connect to localhost:4244 inside namespace: connection refused')));
        return;
      }
      let buf = Buffer.alloc(0);
      socket.on('data', (c: Buffer) => {
        buf = Buffer.concat([buf, c]);
        for (let f = parseFrame(buf); f; f = parseFrame(buf)) {
          seen.masked.push(((buf[1] as number) & 0x80) !== 0);
          buf = buf.subarray(f.end);
          if (f.opcode === 0x8) {
            socket.end();
            return;
          }
          // echo channel 0 back, each byte + 1
          if (f.payload[0] === 0) socket.write(onChannel(0, Buffer.from(f.payload.subarray(1).map((b) => (b + 1) & 0xff))));
        }
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    config = { server: `http://127.0.0.1:${port}`, source: 'test', authorize: async (o) => { (o.headers as Record<string, string>)['Authorization'] = 'Bearer t0k'; } };
  });
  after(() => {
    for (const x of sockets) x.destroy();
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });

  const readN = (s: Duplex, n: number): Promise<Buffer> => new Promise((resolve, reject) => {
    const got: Buffer[] = [];
    let size = 0;
    const on = (c: Buffer): void => {
      got.push(c);
      size += c.length;
      if (size >= n) {
        s.off('data', on);
        resolve(Buffer.concat(got));
      }
    };
    s.on('data', on);
    s.once('error', reject);
  });

  it('carries bytes both ways, the port bytes left out, frames of 7-, 16- and 64-bit lengths', async () => {
    const s = await openPortForward(config, { namespace: 'kube-system', pod: 'agent-1', port: 4244 });
    assert.equal(seen.url, '/api/v1/namespaces/kube-system/pods/agent-1/portforward?ports=4244');
    assert.equal(seen.protocols, 'v4.channel.k8s.io');
    assert.equal(seen.auth, 'Bearer t0k');
    for (const n of [5, 1000, 70_000]) {
      const data = randomBytes(n);
      const back = readN(s, n);
      s.write(data);
      assert.deepEqual(await back, Buffer.from(data.map((b) => (b + 1) & 0xff)));
    }
    s.end();
    await new Promise((r) => s.on('close', r).resume());
    assert.ok(seen.masked.length >= 3 && seen.masked.every(Boolean), 'every client frame masked');
  });

  it('an error on channel 1 is the stream\'s error; a refused upgrade an ApiError', async () => {
    const s = await openPortForward(config, { namespace: 'ns', pod: 'closed', port: 4244 });
    const err = await new Promise<Error>((resolve) => s.on('error', resolve).resume());
    assert.match(err.message, /^port-forward to ns\/closed:4244: failed to connect to localhost:4244 inside namespace: connection refused$/);
    await assert.rejects(openPortForward(config, { namespace: 'ns', pod: 'refused', port: 1 }), (e: unknown) => isApiError(e, 403));
  });

  it('forwardLocally: a loopback port whose connections are port-forwards', async () => {
    await using fwd = await forwardLocally(config, { namespace: 'ns', pod: 'agent-2', port: 4244 });
    const c = connect(fwd.port, '127.0.0.1');
    const back = readN(c, 3);
    c.write(Buffer.from('abc'));
    assert.equal((await back).toString(), 'bcd');
    assert.equal(seen.url, '/api/v1/namespaces/ns/pods/agent-2/portforward?ports=4244');
    c.destroy();
  });
});
