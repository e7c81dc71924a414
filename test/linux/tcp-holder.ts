/**
 * Holds TCP connections (and a few UDP sockets) open inside a network namespace for the live
 * linuxutil test. Args: <ipv4 addr> <ipv6 addr> <n4> <n6> <udp>. Prints "ready" once every
 * connection is established on both ends; on the stdin line "halfclose <k>" the first k clients
 * send FIN (client FIN_WAIT2, server CLOSE_WAIT) and it prints "halfclosed"; exits when stdin ends.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, connect, type Socket } from 'node:net';
import { createInterface } from 'node:readline';

const [v4, v6, n4s, n6s, udps] = process.argv.slice(2);
const n4 = Number(n4s);
const n6 = Number(n6s);
const clients: Socket[] = [];
const accepted: Socket[] = [];
const udp: UdpSocket[] = [];
let ended = 0;
let wantEnded = -1;

const server = createServer({ allowHalfOpen: true }, (s) => {
  accepted.push(s);
  s.on('end', () => {
    ended++;
    if (ended === wantEnded) process.stdout.write('halfclosed\n');
  });
  maybeReady();
});
let connected = 0;
let bound = 0;
function maybeReady(): void {
  if (accepted.length === n4 + n6 && connected === n4 + n6 && bound === Number(udps)) process.stdout.write('ready\n');
}

server.listen(0, '::', () => {
  const { port } = server.address() as { port: number };
  for (let i = 0; i < n4 + n6; i++) {
    const c = connect({ port, host: i < n4 ? (v4 as string) : (v6 as string), allowHalfOpen: true }, () => {
      connected++;
      maybeReady();
    });
    clients.push(c);
  }
  for (let i = 0; i < Number(udps); i++) {
    const u = createSocket(i % 2 ? 'udp6' : 'udp4');
    u.bind(0, () => {
      bound++;
      maybeReady();
    });
    udp.push(u);
  }
});

createInterface({ input: process.stdin })
  .on('line', (line) => {
    const m = /^halfclose (\d+)$/.exec(line.trim());
    if (!m) return;
    wantEnded = Number(m[1]);
    clients.slice(0, wantEnded).forEach((c) => c.end());
  })
  .on('close', () => process.exit(0));
