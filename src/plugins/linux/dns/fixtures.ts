/** Builders for DNS messages and dns_event records, shared by the tests and the benchmarks (pure). */

export function encodeName(name: string): Buffer {
  if (name === '') return Buffer.from([0]);
  return Buffer.concat([...name.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')])), Buffer.from([0])]);
}

export function dnsQuery(id: number, name: string, type = 1): Buffer {
  const h = Buffer.alloc(12);
  h.writeUInt16BE(id, 0);
  h.writeUInt16BE(0x0100, 2);
  h.writeUInt16BE(1, 4);
  const q = Buffer.alloc(4);
  q.writeUInt16BE(type, 0);
  q.writeUInt16BE(1, 2);
  return Buffer.concat([h, encodeName(name), q]);
}

/** A response to `query` with A records (compressed names pointing at the question). */
export function dnsResponse(query: Buffer, addrs: readonly string[], rcode = 0): Buffer {
  const h = Buffer.from(query.subarray(0, 12));
  h.writeUInt16BE(0x8180 | rcode, 2);
  h.writeUInt16BE(addrs.length, 6);
  const rrs = addrs.map((a) => Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, ...a.split('.').map(Number)]));
  return Buffer.concat([h, query.subarray(12), ...rrs]);
}

function checksumless(ipVersion: 4 | 6, proto: 6 | 17, l4: Buffer): Buffer {
  if (ipVersion === 4) {
    const ip = Buffer.alloc(20);
    ip[0] = 0x45;
    ip.writeUInt16BE(20 + l4.length, 2);
    ip[8] = 64;
    ip[9] = proto;
    Buffer.from([10, 0, 0, 1]).copy(ip, 12);
    Buffer.from([10, 0, 0, 53]).copy(ip, 16);
    return Buffer.concat([ip, l4]);
  }
  const ip = Buffer.alloc(40);
  ip[0] = 0x60;
  ip.writeUInt16BE(l4.length, 4);
  ip[6] = proto;
  ip[7] = 64;
  Buffer.from('fd000000000000000000000000000001', 'hex').copy(ip, 8);
  Buffer.from('fd000000000000000000000000000053', 'hex').copy(ip, 24);
  return Buffer.concat([ip, l4]);
}

/** An Ethernet frame carrying `dns` over UDP or TCP (with its 2-byte length) from port 40000 to 53. */
export function dnsFrame(dns: Buffer, opts: { ipVersion?: 4 | 6; tcp?: boolean; response?: boolean } = {}): Buffer {
  const v = opts.ipVersion ?? 4;
  const [sport, dport] = opts.response ? [53, 40000] : [40000, 53];
  let l4: Buffer;
  if (opts.tcp) {
    const th = Buffer.alloc(20);
    th.writeUInt16BE(sport, 0);
    th.writeUInt16BE(dport, 2);
    th[12] = 5 << 4;
    th[13] = 0x18;
    const len = Buffer.alloc(2);
    len.writeUInt16BE(dns.length);
    l4 = Buffer.concat([th, len, dns]);
  } else {
    const uh = Buffer.alloc(8);
    uh.writeUInt16BE(sport, 0);
    uh.writeUInt16BE(dport, 2);
    uh.writeUInt16BE(8 + dns.length, 4);
    l4 = Buffer.concat([uh, dns]);
  }
  const eth = Buffer.alloc(14);
  eth.writeUInt16BE(v === 4 ? 0x0800 : 0x86dd, 12);
  return Buffer.concat([eth, checksumless(v, opts.tcp ? 6 : 17, l4)]);
}

/** A dns_event ring record around `frame` (captured up to `cap` bytes). */
export function dnsEvent(frame: Buffer, opts: { outgoing?: boolean; cap?: number } = {}): Buffer {
  const cap = Math.min(frame.length, opts.cap ?? 1024);
  const e = Buffer.alloc(24 + 1024);
  e.writeBigUInt64LE(123456789n, 0);
  e.writeUInt32LE(frame.length, 8);
  e.writeUInt32LE(cap, 12);
  e.writeUInt32LE(2, 16);
  e.writeUInt16LE(14, 20);
  e[22] = opts.outgoing ? 4 : 0;
  frame.copy(e, 24, 0, cap);
  return e;
}
