/**
 * execInPod against a local server that speaks the API server's side of the exec WebSocket: the
 * upgrade request (command, container, protocols, credentials), the channels (empty opening frames,
 * fragments, 16- and 64-bit lengths, a ping, the Status), back-pressure from a slow stdout, the close
 * handshake; a refused exec (403) as an ApiError; abort.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { PassThrough, Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { attachToPod, execInPod } from './exec.js';
import { isApiError, type RestConfig } from './rest.js';

/** An unmasked (server) frame. */
function serverFrame(opcode: number, payload: Buffer, fin = true): Buffer {
  const len = payload.length;
  const head = len < 126 ? Buffer.from([0, len]) : len < 65_536 ? Buffer.alloc(4) : Buffer.alloc(10);
  if (len >= 126 && len < 65_536) {
    head[1] = 126;
    head.writeUInt16BE(len, 2);
  } else if (len >= 65_536) {
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(len), 2);
  }
  head[0] = (fin ? 0x80 : 0) | opcode;
  return Buffer.concat([head, payload]);
}
const channel = (ch: number, data: Buffer | string): Buffer => Buffer.concat([Buffer.from([ch]), Buffer.from(data)]);

/** The client's frames as the server reads them (masked, as RFC 6455 wants). */
function clientFrames(socket: Duplex, on: (opcode: number, payload: Buffer, masked: boolean) => void): void {
  let buf = Buffer.alloc(0);
  socket.on('data', (c: Buffer) => {
    buf = Buffer.concat([buf, c]);
    while (buf.length >= 2) {
      const len = (buf[1] as number) & 0x7f;
      const masked = ((buf[1] as number) & 0x80) !== 0;
      const off = 2 + (masked ? 4 : 0);
      if (buf.length < off + len) return;
      const mask = buf.subarray(2, 6);
      const p = Buffer.from(buf.subarray(off, off + len)).map((b, i) => (masked ? b ^ (mask[i % 4] as number) : b));
      on((buf[0] as number) & 0x0f, Buffer.from(p), masked);
      buf = buf.subarray(off + len);
    }
  });
}

describe('execInPod', () => {
  let server: Server;
  let config: RestConfig;
  const big = randomBytes(200_000);
  const seen: { url?: string; protocols?: string; auth?: string; pong?: string; closeMasked?: boolean } = {};
  let refuse = false;
  let hang = false;
  const sockets: Duplex[] = [];

  before(async () => {
    server = createServer((_req, res) => {
      res.writeHead(403, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', status: 'Failure', reason: 'Forbidden', message: 'pods "p" is forbidden: cannot create resource "pods/exec"', code: 403 }));
    });
    server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
      sockets.push(socket);
      socket.on('error', () => undefined);
      if (refuse) {
        socket.end('HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"kind":"Status","reason":"Forbidden","message":"exec is forbidden"}');
        return;
      }
      seen.url = req.url;
      seen.protocols = String(req.headers['sec-websocket-protocol']);
      seen.auth = String(req.headers['authorization']);
      const accept = createHash('sha1').update(`${String(req.headers['sec-websocket-key'])}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n`);
      if (hang) return;
      clientFrames(socket, (opcode, payload, masked) => {
        if (opcode === 0xa) seen.pong = payload.toString();
        if (opcode === 0x8) {
          seen.closeMasked = masked;
          socket.end(serverFrame(0x8, Buffer.from([0x03, 0xe8])));
        }
      });
      // the opening frames of each channel (channel byte only), then the output
      for (const ch of [1, 2, 3]) socket.write(serverFrame(0x2, Buffer.from([ch])));
      socket.write(serverFrame(0x2, channel(1, 'hel'), false));
      socket.write(serverFrame(0x0, Buffer.from('lo '), true));
      socket.write(serverFrame(0x9, Buffer.from('are you there')));
      socket.write(serverFrame(0x2, channel(2, 'a warning')));
      // 200 000 bytes in frames of 64 KiB and more (64-bit lengths) and of 1000 (16-bit), split across writes
      socket.write(serverFrame(0x2, channel(1, big.subarray(0, 70_000))));
      for (let i = 70_000; i < big.length; i += 1000) socket.write(serverFrame(0x2, channel(1, big.subarray(i, i + 1000))));
      const status = JSON.stringify({ metadata: {}, status: 'Failure', message: 'command terminated with non-zero exit code', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '3' }] } });
      const frame = serverFrame(0x2, channel(3, status));
      socket.write(frame.subarray(0, 7));
      setTimeout(() => socket.write(frame.subarray(7)), 20);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    config = {
      server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      source: 'test',
      authorize: async (o) => {
        (o.headers as Record<string, string>)['Authorization'] = 'Bearer t0k';
      },
    };
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('streams stdout (slowly drained) and stderr, answers a ping, returns the Status and closes cleanly', async () => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const stdout = new Writable({
      highWaterMark: 4096,
      write(c: Buffer, _e, cb): void {
        out.push(c);
        setTimeout(cb, 1); // a slow disk: the socket must wait for it
      },
    });
    const stderr = new Writable({ write: (c: Buffer, _e, cb): void => void (err.push(c), cb()) });
    const status = await execInPod(config, { namespace: 'n s', pod: 'p', container: 'c', command: ['cat', 'host/a b'], stdout, stderr });
    assert.equal(status?.status, 'Failure');
    assert.equal(status?.details?.causes?.find((c) => c.reason === 'ExitCode')?.message, '3');
    const got = Buffer.concat(out);
    assert.equal(got.subarray(0, 6).toString(), 'hello ');
    assert.ok(got.subarray(6).equals(big), 'every byte of stdout, in order');
    assert.equal(Buffer.concat(err).toString(), 'a warning');
    assert.equal(seen.pong, 'are you there');
    assert.equal(seen.closeMasked, true, 'the client masks its frames');
    assert.equal(seen.url, '/api/v1/namespaces/n%20s/pods/p/exec?command=cat&command=host%2Fa+b&container=c&stdout=true&stderr=true');
    assert.equal(seen.protocols, 'v5.channel.k8s.io, v4.channel.k8s.io');
    assert.equal(seen.auth, 'Bearer t0k');
  });

  it('resolves once a slow stdout has taken every byte, also when its buffer never fills (no drain event)', { timeout: 20_000 }, async () => {
    const out: Buffer[] = [];
    let later = 0;
    const stdout = new Writable({
      highWaterMark: 64 << 20, // above everything the command prints: write() never says "wait"
      write(c: Buffer, _e, cb): void {
        setTimeout(() => {
          out.push(c);
          later++;
          cb();
        }, 2);
      },
    });
    const stderr = new Writable({ write: (_c, _e, cb): void => cb() });
    const status = await execInPod(config, { namespace: 'n s', pod: 'p', container: 'c', command: ['cat', 'host/a b'], stdout, stderr });
    assert.equal(status?.status, 'Failure');
    assert.ok(later > 0);
    const got = Buffer.concat(out);
    assert.equal(got.subarray(0, 6).toString(), 'hello ');
    assert.ok(got.subarray(6).equals(big), 'every byte of stdout, in order, before execInPod resolved');
  });

  it('an exec the server refuses is its ApiError (403, the Status message)', async () => {
    refuse = true;
    try {
      const sink = new Writable({ write: (_c, _e, cb): void => cb() });
      const e = await execInPod(config, { namespace: 'n', pod: 'p', container: 'c', command: ['ls'], stdout: sink, stderr: sink }).then(() => undefined, (x: unknown) => x);
      assert.ok(isApiError(e, 403), String(e));
      assert.equal(e.statusMessage, 'exec is forbidden');
    } finally {
      refuse = false;
    }
  });

  it('abort ends a stream that says nothing, with the signal\'s reason', async () => {
    hang = true;
    try {
      const ac = new AbortController();
      const sink = new Writable({ write: (_c, _e, cb): void => cb() });
      const running = execInPod(config, { namespace: 'n', pod: 'p', container: 'c', command: ['sleep'], stdout: sink, stderr: sink, signal: ac.signal });
      setTimeout(() => ac.abort(new Error('stop now')), 100);
      await assert.rejects(running, /stop now/);
    } finally {
      hang = false;
    }
  });
});

describe('attachToPod', () => {
  it('sends stdin on channel 0, the terminal size on 4, stdin\'s end as Ctrl-D to a terminal and as [255, 0] (v5) otherwise, a TTY without stderr', async () => {
    const got: { url?: string; frames: Buffer[] } = { frames: [] };
    const server = createServer();
    server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
      got.url = req.url;
      socket.on('error', () => undefined);
      const accept = createHash('sha1').update(`${String(req.headers['sec-websocket-key'])}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n`);
      clientFrames(socket, (opcode, payload) => {
        if (opcode !== 0x2) return;
        got.frames.push(payload);
        // the terminal echoes stdin; stdin's close ends the process, and the server closes the stream
        if (payload[0] === 0) socket.write(serverFrame(0x2, channel(1, payload.subarray(1))));
        if (payload[0] === 255 || (payload[0] === 0 && payload[1] === 4)) socket.end(serverFrame(0x8, Buffer.from([0x03, 0xe8])));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const cfg: RestConfig = { server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, source: 'test', authorize: async () => undefined };
      const stdin = new PassThrough();
      const out: Buffer[] = [];
      const stdout = new Writable({ write: (c: Buffer, _e, cb): void => void (out.push(c), cb()) });
      let resized: (() => void) | undefined;
      let width = 80;
      const done = attachToPod(cfg, {
        namespace: 'ns', pod: 'p', container: 'c', stdin, stdout, stderr: new Writable({ write: (_c, _e, cb): void => cb() }), tty: true,
        terminal: { current: () => ({ width, height: 24 }), subscribe: (f) => ((resized = f), () => (resized = undefined)) },
      });
      // Each step once the server has what the last one sent (not after a fixed sleep: under load the
      // stream can take longer to open, and the first size sent would then be the later one).
      const frames = async (n: number): Promise<void> => {
        for (let t = 0; t < 200 && got.frames.length < n; t++) await new Promise((r) => setTimeout(r, 10));
      };
      await frames(1);
      stdin.write('echo hi\n');
      await frames(2);
      width = 120;
      resized?.();
      await frames(3);
      stdin.end();
      await done;
      assert.equal(got.url, '/api/v1/namespaces/ns/pods/p/attach?container=c&stdout=true&stderr=false&stdin=true&tty=true');
      assert.deepEqual(got.frames.map((f) => [f[0], f.subarray(1).toString()]), [
        [4, '{"Width":80,"Height":24}'], [0, 'echo hi\n'], [4, '{"Width":120,"Height":24}'], [0, '\u0004'],
      ]);
      assert.equal(Buffer.concat(out).toString(), 'echo hi\n\u0004');
      assert.equal(resized, undefined, 'the resize listener removed');
      got.frames.length = 0;
      const plain = new PassThrough();
      const closed = attachToPod(cfg, { namespace: 'ns', pod: 'p', container: 'c', stdin: plain, stdout, stderr: new Writable({ write: (_c, _e, cb): void => cb() }) });
      await new Promise((r) => setTimeout(r, 50));
      plain.end('x');
      await closed;
      assert.match(got.url, /\/attach\?container=c&stdout=true&stderr=true&stdin=true$/);
      assert.deepEqual(got.frames.map((f) => [...f]), [[0, 120], [255, 0]]);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
