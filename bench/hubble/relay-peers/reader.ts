/**
 * The follower of relay-peers.bench.ts, in a worker thread: one `GetFlows {follow: true}` to Hubble
 * Relay over bare node:http2 (as cheap as a Go decode loop, as in follow.bench.ts), every
 * GetFlowsResponse decoded far enough to count its flows by `node_name`, sum its LostEvents and log
 * its NodeStatusEvents (the relay's NODE_CONNECTED / NODE_UNAVAILABLE / NODE_ERROR, with their nodes).
 * Messages from the parent: 'reset' (zero every count), { forget: names, since } (their first-flow
 * times cleared: the next flow from each whose own time is `since` (ms) or later is timed; older ones
 * still come out of the relay's sort buffer for a while), 'snapshot' (answers with Snapshot), 'stop'.
 */
import http2 from 'node:http2';
import { parentPort, workerData } from 'node:worker_threads';

export interface NodeStatusSeen {
  /** Date.now() when it arrived. */
  readonly t: number;
  /** 1 NODE_CONNECTED, 2 NODE_UNAVAILABLE, 3 NODE_GONE, 4 NODE_ERROR. */
  readonly state: number;
  readonly names: string[];
  readonly message: string;
}

export interface Snapshot {
  readonly flows: number;
  readonly lost: number;
  readonly byNode: Record<string, number>;
  /** LostEvents' counts by the node_name of their response (the peer that lost them). */
  readonly lostByNode: Record<string, number>;
  /** Date.now() of the first flow from each node since the reset (or since it was forgotten: of the first flow of its `since` or later). */
  readonly first: Record<string, number>;
  readonly statuses: NodeStatusSeen[];
  /** The stream ended (with its status, when the relay sent one). */
  readonly ended?: string;
}

const { addr, window } = workerData as { addr: string; window: number };
const port = parentPort;
if (!port) throw new Error('reader.ts runs as a worker thread');

let flows = 0;
let lost = 0;
let byNode = new Map<string, number>();
let lostByNode = new Map<string, number>();
let first = new Map<string, number>();
/** Per forgotten node: the flow time (ms) from which its next flow is timed. */
const since = new Map<string, number>();
let statuses: NodeStatusSeen[] = [];
let ended: string | undefined;

const session = http2.connect(`http://${addr}`, { settings: { initialWindowSize: window } });
session.on('connect', () => session.setLocalWindowSize(window));
session.on('error', (e) => (ended = `session: ${e.message}`));
const req = session.request({ ':method': 'POST', ':path': '/observer.Observer/GetFlows', 'content-type': 'application/grpc', te: 'trailers' });
const body = Buffer.from([0x18, 0x01]); // follow: true (field 3, varint 1)
const head = Buffer.alloc(5);
head.writeUInt32BE(body.length, 1);
req.end(Buffer.concat([head, body]));
req.on('trailers', (t) => (ended = `grpc-status ${String(t['grpc-status'])} ${String(t['grpc-message'] ?? '')}`));
req.on('error', (e) => (ended ??= `stream: ${e.message}`));

let b: Buffer = Buffer.alloc(0);
let p = 0;
const varint = (): number => {
  let v = 0;
  let m = 1;
  let x: number;
  do {
    x = b[p++] as number;
    v += (x & 0x7f) * m;
    m *= 128;
  } while (x & 0x80);
  return v;
};
const skip = (wire: number): void => {
  if (wire === 0) varint();
  else if (wire === 2) {
    const n = varint();
    p += n;
  } else if (wire === 1) p += 8;
  else if (wire === 5) p += 4;
  else throw new Error(`wire type ${wire}`);
};

/** relay.NodeStatusEvent: state_change 1, node_names 2, message 3. */
function nodeStatus(end: number): void {
  let state = 0;
  const names: string[] = [];
  let message = '';
  while (p < end) {
    const key = varint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (field === 1 && wire === 0) state = varint();
    else if ((field === 2 || field === 3) && wire === 2) {
      const n = varint();
      const s = b.toString('utf8', p, p + n);
      p += n;
      if (field === 2) names.push(s);
      else message = s;
    } else skip(wire);
  }
  statuses.push({ t: Date.now(), state, names, message });
}

/** flow.LostEvent: source 1, num_events_lost 2 → how many. */
function lostEvent(end: number): number {
  let n = 0;
  while (p < end) {
    const key = varint();
    if (key === 0x10) n += varint();
    else skip(key & 7);
  }
  return n;
}

/** google.protobuf.Timestamp in b[p, end) → ms. */
function timestampMs(end: number): number {
  let seconds = 0;
  let nanos = 0;
  while (p < end) {
    const key = varint();
    if (key === 0x08) seconds = varint();
    else if (key === 0x10) nanos = varint();
    else skip(key & 7);
  }
  return seconds * 1000 + nanos / 1e6;
}

/** One GetFlowsResponse in b[p, end): flow 1, node_status 2, lost_events 3, node_name 1000, time 1001 (in any order). */
function response(end: number): void {
  let node: string | undefined;
  let isFlow = false;
  let timeMs = 0;
  let lostHere = 0;
  while (p < end) {
    const key = varint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (wire !== 2) {
      skip(wire);
      continue;
    }
    const n = varint();
    const at = p;
    if (field === 1) isFlow = true;
    else if (field === 2) nodeStatus(p + n);
    else if (field === 3) lostHere = lostEvent(p + n);
    else if (field === 1000) node = b.toString('latin1', p, p + n);
    else if (field === 1001) timeMs = timestampMs(p + n);
    p = at + n;
  }
  if (lostHere > 0) {
    lost += lostHere;
    if (node !== undefined) lostByNode.set(node, (lostByNode.get(node) ?? 0) + lostHere);
  }
  if (!isFlow) return;
  flows++;
  if (node === undefined) return;
  byNode.set(node, (byNode.get(node) ?? 0) + 1);
  if (!first.has(node) && timeMs >= (since.get(node) ?? 0)) first.set(node, Date.now());
}

req.on('data', (d: Buffer) => {
  b = p < b.length ? Buffer.concat([b.subarray(p), d]) : d;
  p = 0;
  while (b.length - p >= 5) {
    const len = b.readUInt32BE(p + 1);
    if (b.length - p < 5 + len) break;
    const start = p + 5;
    p = start;
    response(start + len);
    p = start + len;
  }
});

port.postMessage('ready');
port.on('message', (msg: unknown) => {
  if (msg === 'reset') {
    flows = 0;
    lost = 0;
    byNode = new Map();
    lostByNode = new Map();
    first = new Map();
    since.clear();
    statuses = [];
  } else if (typeof msg === 'object' && msg !== null && 'forget' in msg) {
    const m = msg as { forget: string[]; since: number };
    for (const n of m.forget) {
      first.delete(n);
      since.set(n, m.since);
    }
  } else if (msg === 'snapshot') {
    const snap: Snapshot = { flows, lost, byNode: Object.fromEntries(byNode), lostByNode: Object.fromEntries(lostByNode), first: Object.fromEntries(first), statuses, ...(ended ? { ended } : {}) };
    port.postMessage(snap);
  } else if (msg === 'stop') {
    req.close();
    session.close();
    port.postMessage('stopped');
  }
});
