/** Node.js scripts the eBPF tests run inside their namespaces (senders, servers). */

/** Sends argv[2] UDP datagrams of argv[5] bytes to argv[3]:argv[4], one at a time, from source port argv[6] if given; prints "sent N". */
export const UDP_SEND = `
import dgram from 'node:dgram';
const [n, host, port, size, sport] = process.argv.slice(1).map((x, i) => (i === 1 ? x : Number(x)));
const s = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
s.on('error', () => {});
if (sport) await new Promise((r) => s.bind(sport, r));
const buf = Buffer.alloc(size || 32, 0x61);
for (let i = 0; i < n; i++) await new Promise((r) => s.send(buf, port, host, r));
s.close();
console.log('sent', n);
`;

/** Sends one 8-byte UDP datagram to argv[3]:argv[4] from each of argv[2] sockets, all open until the last has sent (so each has a source port of its own: as many flows); prints "sent N". */
export const UDP_PORTS = `
import dgram from 'node:dgram';
const [n, host, port] = process.argv.slice(1).map((x, i) => (i === 1 ? x : Number(x)));
const open = [];
for (let i = 0; i < n; i++) {
  const s = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
  s.on('error', () => {});
  open.push(s);
  await new Promise((r) => s.send(Buffer.alloc(8, 0x61), port, host, r));
}
for (const s of open) s.close();
console.log('sent', n);
`;

/** Sends argv[1] datagrams `<argv[4]>-<nnn>` (numbered from 000) to argv[2]:argv[3], argv[5] ms apart: each one told apart in a capture. */
export const TAGGED_UDP_SEND = `
import dgram from 'node:dgram';
const [n, host, port, tag, gap] = process.argv.slice(1);
const s = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
for (let i = 0; i < Number(n); i++) {
  await new Promise((r) => s.send(Buffer.from(tag + '-' + String(i).padStart(3, '0')), Number(port), host, r));
  if (Number(gap)) await new Promise((r) => setTimeout(r, Number(gap)));
}
s.close();
console.log('sent', n);
`;

/** Counts UDP datagrams on argv[2]:argv[3] until SIGTERM; prints "got N" on stdout when it stops. */
export const UDP_SINK = `
import dgram from 'node:dgram';
const [host, port] = process.argv.slice(1);
const s = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
let got = 0;
s.on('message', () => got++);
s.bind(Number(port), host, () => console.log('ready'));
process.on('SIGTERM', () => { console.log('got', got); process.exit(0); });
`;

/** A TCP sink on argv[2]:argv[3] that reads and discards; prints "ready", then "got N" per connection end. */
export const TCP_SINK = `
import net from 'node:net';
const [host, port] = process.argv.slice(1);
const srv = net.createServer((c) => { let n = 0; c.on('data', (d) => (n += d.length)); c.on('end', () => { console.log('got', n); c.end(); }); c.on('error', () => {}); });
srv.listen(Number(port), host, () => console.log('ready'));
process.on('SIGTERM', () => process.exit(0));
`;

/** Sends argv[2] bytes over TCP to argv[3]:argv[4] and closes; prints "sent N" after the peer closed. */
export const TCP_SEND = `
import net from 'node:net';
const [n, host, port] = process.argv.slice(1).map((x, i) => (i === 1 ? x : Number(x)));
const c = net.connect(port, host);
const chunk = Buffer.alloc(65536, 0x62);
let left = n;
c.on('connect', function pump() {
  while (left > 0) { const k = Math.min(left, chunk.length); left -= k; if (!c.write(chunk.subarray(0, k))) return c.once('drain', pump); }
  c.end();
});
c.on('data', () => {});
c.on('close', () => console.log('sent', n));
`;

/**
 * argv[2] short TCP connections to argv[3]:argv[4], one after another: each sends argv[5] bytes, then
 * closes (`fin`: end, and waits for the peer's close) or resets (`rst`: RST, SO_LINGER 0, once the
 * peer has acknowledged the bytes); prints "done N".
 */
export const TCP_SHORT = `
import net from 'node:net';
const [n, host, port, size] = process.argv.slice(1, 5).map((x, i) => (i === 1 ? x : Number(x)));
const how = process.argv[5];
for (let i = 0; i < n; i++) {
  await new Promise((resolve, reject) => {
    const c = net.connect(port, host, () => c.write(Buffer.alloc(size, 0x63), () => {
      if (how === 'fin') return c.end();
      setTimeout(() => c.resetAndDestroy(), 100); // the peer's delayed ACK of the bytes first
    }));
    c.on('data', () => {});
    c.on('error', reject);
    c.on('close', resolve);
  });
}
console.log('done', n);
`;

/** A DNS server on port 53 (UDP and TCP, IPv4 and IPv6, argv[2] and argv[3]): answers every A query with 192.0.2.1. */
export const DNS_SERVER = `
import dgram from 'node:dgram';
import net from 'node:net';
const [v4, v6] = process.argv.slice(1);
function answer(q) {
  let p = 12;
  while (q[p] !== 0) p += q[p] + 1;
  const question = q.subarray(12, p + 5);
  const h = Buffer.alloc(12);
  q.copy(h, 0, 0, 2);
  h.writeUInt16BE(0x8180, 2); h.writeUInt16BE(1, 4); h.writeUInt16BE(1, 6);
  const rr = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1]);
  return Buffer.concat([h, question, rr]);
}
let ready = 0;
const up = () => { if (++ready === 4) console.log('ready'); };
for (const [type, host] of [['udp4', v4], ['udp6', v6]]) {
  const s = dgram.createSocket(type);
  s.on('message', (m, r) => s.send(answer(m), r.port, r.address));
  s.bind(53, host, up);
}
for (const host of [v4, v6]) {
  net.createServer((c) => {
    let buf = Buffer.alloc(0);
    c.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const a = answer(buf.subarray(2, 2 + buf.readUInt16BE(0)));
        buf = buf.subarray(2 + buf.readUInt16BE(0));
        const l = Buffer.alloc(2); l.writeUInt16BE(a.length);
        c.write(Buffer.concat([l, a]));
      }
    });
    c.on('error', () => {});
  }).listen(53, host, up);
}
process.on('SIGTERM', () => process.exit(0));
`;

/** argv[2] queries over each of UDP/IPv4, UDP/IPv6 and TCP/IPv4 (one connection) to argv[3] / argv[4]; prints JSON counts. */
export const DNS_CLIENT = `
import dgram from 'node:dgram';
import net from 'node:net';
const [n, v4, v6] = process.argv.slice(1).map((x, i) => (i === 0 ? Number(x) : x));
function query(id, name) {
  const h = Buffer.alloc(12); h.writeUInt16BE(id, 0); h.writeUInt16BE(0x0100, 2); h.writeUInt16BE(1, 4);
  const labels = name.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
  return Buffer.concat([h, ...labels, Buffer.from([0, 0, 1, 0, 1])]);
}
const got = { udp4: 0, udp6: 0, tcp: 0 };
for (const [type, host] of [['udp4', v4], ['udp6', v6]]) {
  const s = dgram.createSocket(type);
  for (let i = 0; i < n; i++) {
    await new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no answer')), 5000 * (Number(process.env.RETINA_TEST_TIME_SCALE) || 1));
      s.once('message', () => { clearTimeout(t); got[type]++; resolve(); });
      s.send(query(i, 'svc' + i + '.rtbpf.test'), 53, host);
    });
  }
  s.close();
}
await new Promise((resolve, reject) => {
  const c = net.connect(53, v4);
  let buf = Buffer.alloc(0);
  let i = 0;
  const next = () => { const q = query(i, 'tcp' + i + '.rtbpf.test'); const l = Buffer.alloc(2); l.writeUInt16BE(q.length); c.write(Buffer.concat([l, q])); };
  c.on('connect', next);
  c.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
      buf = buf.subarray(2 + buf.readUInt16BE(0));
      got.tcp++;
      if (++i < n) next(); else c.end();
    }
  });
  c.on('close', resolve);
  c.on('error', reject);
});
console.log(JSON.stringify(got));
`;

/**
 * Sends argv[2] bytes over TCP to argv[3]:argv[4] in chunks of argv[5] bytes, one every argv[6] ms,
 * then closes; prints "sent N" after the peer closed.
 */
export const TCP_PACED_SEND = `
import net from 'node:net';
const [n, host, port, chunkSize, everyMs] = process.argv.slice(1).map((x, i) => (i === 1 ? x : Number(x)));
const c = net.connect(port, host);
const chunk = Buffer.alloc(chunkSize, 0x63);
let left = n;
c.on('connect', () => {
  const t = setInterval(() => {
    const k = Math.min(left, chunk.length);
    left -= k;
    c.write(chunk.subarray(0, k));
    if (left === 0) { clearInterval(t); c.end(); }
  }, everyMs);
});
c.on('data', () => {});
c.on('close', () => console.log('sent', n));
`;

/**
 * A slow request/response server on argv[2]:argv[3]: answers each line with "pong\n" after argv[4]
 * ms (a stand-in for the API server); prints "ready".
 */
export const TCP_SLOW_ECHO = `
import net from 'node:net';
const [host, port, delay] = process.argv.slice(1);
const srv = net.createServer((c) => {
  let buf = '';
  c.on('data', (d) => { buf += d; for (let i; (i = buf.indexOf('\\n')) >= 0; buf = buf.slice(i + 1)) setTimeout(() => c.write('pong\\n'), Number(delay)); });
  c.on('end', () => c.end());
  c.on('error', () => {});
});
srv.listen(Number(port), host, () => console.log('ready'));
process.on('SIGTERM', () => process.exit(0));
`;

/**
 * argv[2] connections to argv[3]:argv[4], one after the other, each doing argv[5] request/response
 * rounds ("ping\n", waits for "pong\n") and closing; prints "done C R".
 */
export const TCP_PING = `
import net from 'node:net';
const [conns, host, port, rounds] = process.argv.slice(1).map((x, i) => (i === 1 ? x : Number(x)));
for (let c = 0; c < conns; c++) {
  const s = net.connect(port, host);
  await new Promise((r) => s.once('connect', r));
  for (let i = 0; i < rounds; i++) {
    s.write('ping\\n');
    await new Promise((r) => s.once('data', r));
  }
  s.end();
  await new Promise((r) => s.once('close', r));
}
console.log('done', conns, rounds);
`;
