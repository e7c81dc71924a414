/**
 * The traffic the real-Prometheus test keeps up in its namespaces while Prometheus scrapes, one
 * round every 100 ms, so that every rate() a panel shows stays above zero. Node.js ES module text,
 * run with Netns.spawnNode(TRAFFIC_LOOP, [role, ...addresses]).
 */
export const TRAFFIC_LOOP = `
import dgram from 'node:dgram';
import net from 'node:net';
const [role, peer, bigTo] = process.argv.slice(1);
const s = dgram.createSocket('udp4');
s.on('error', () => {});
const small = Buffer.alloc(64, 0x61);
const big = Buffer.alloc(1000, 0x62);
function query(id) {
  const h = Buffer.alloc(12); h.writeUInt16BE(id, 0); h.writeUInt16BE(0x0100, 2); h.writeUInt16BE(1, 4);
  return Buffer.concat([h, Buffer.from([3, 0x73, 0x76, 0x63, 4, 0x74, 0x65, 0x73, 0x74, 0]), Buffer.from([0, 1, 0, 1])]);
}
const dns = dgram.createSocket('udp4');
dns.on('error', () => {});
dns.on('message', () => {});
let id = 0;
const pending = new Set();
function tcp(port) {
  if (pending.size > 20) return;
  const c = net.connect({ host: peer, port, timeout: 3000 });
  pending.add(c);
  const done = () => { pending.delete(c); c.destroy(); };
  c.on('error', done); c.on('timeout', done); c.on('connect', done);
}
setInterval(() => {
  s.send(small, 9000, peer);      // forwarded (counted by packetforward both ways)
  s.send(small, 9999, peer);      // the peer's nftables input rule drops it: NETFILTER_DROP, ingress there
  s.send(small, 9998, peer);      // no socket there: NO_SOCKET
  s.send(small, 9997, peer);      // our own nftables output rule drops it: NETFILTER_DROP, egress
  s.send(big, 9000, bigTo);       // over the MTU of the far end: tx_dropped here, rx_dropped there
  if (role === 'node') { dns.send(query(id++ & 0xffff), 53, peer); tcp(7); }  // DNS; a SYN the peer drops: TCPTimeouts
  else tcp(9996);                 // a closed port on the node: a RST sent (OutRsts)
}, 100);
process.on('SIGTERM', () => process.exit(0));
console.log('ready');
`;
