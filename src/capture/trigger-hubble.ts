/**
 * Where a triggered capture's trigger comes from: the node's own agent, over its Hubble Observer
 * (`GetFlows` with `follow`, the trigger's FlowFilters sent along so the agent filters; the drop
 * reason checked here, as our flows carry it in Summary). The capture pod runs on the host network,
 * so `127.0.0.1:4244` is the agent's Hubble port (or `unix:///…` its socket). The first matching flow
 * is the trigger: its time and 5-tuple tell the ring (ring.ts) which packet it was.
 *
 * Why the agent and not a hook of the workload's own: the agent already watches every drop with its
 * reason (dropreason, in the kernel) and every flow with its pods (the enricher), so the workload needs
 * no BPF, no BTF, no API-server watch of pods; the cost is the flow's way through the agent (its ring
 * buffer's wake-up, the enricher, the Hubble ring), measured in docs/capture.md.
 */
import * as grpc from '@grpc/grpc-js';
import { dropReasonOfSummary, HUBBLE_PROTO_FILES, hubbleProtoFiles, timestampMs } from '../flow/hubble/index.js';
import type { Logger } from '../log/index.js';
import { addressBytes } from './pcap-header.js';
import { CaptureError } from './provider.js';
import type { TriggerPoint } from './ring.js';
import { triggerFlowFilters, type ResolvedTrigger } from './trigger.js';

type Obj = Record<string, unknown>;

/** The trigger's flow as the agent reported it (manifest.json's `trigger.flow`). */
export interface TriggerFlow {
  readonly timeMs: number;
  readonly verdict: string;
  readonly dropReason: string | undefined;
  readonly source: string;
  readonly destination: string;
  readonly protocol: string;
  readonly sourcePort: number;
  readonly destinationPort: number;
  readonly sourcePod: string | undefined;
  readonly destinationPod: string | undefined;
}

export interface TriggerSource {
  /** Resolves once the agent accepted the follow (the capture is armed). */
  readonly armed: Promise<void>;
  /** Resolves with the first matching flow and the moment it arrived here. */
  readonly fired: Promise<{ flow: TriggerFlow; point: TriggerPoint; seenAtMs: number }>;
  close(): void;
}

const PROTOS: Readonly<Record<string, number>> = { TCP: 6, UDP: 17, ICMPv4: 1, ICMPv6: 58, SCTP: 132 };

/** Our Flow fields of a Hubble flow.Flow (the proto-loader object the follow yields). */
export function triggerFlowOf(f: Obj): TriggerFlow {
  const ip = (f['IP'] ?? {}) as Obj;
  const l4 = (f['l4'] ?? {}) as Obj;
  const protocol = Object.keys(l4).find((k) => k in PROTOS) ?? '';
  const ports = (l4[protocol] ?? {}) as Obj;
  const pod = (e: unknown): string | undefined => {
    const x = (e ?? {}) as Obj;
    return x['pod_name'] ? `${String(x['namespace'] ?? '')}/${String(x['pod_name'])}` : undefined;
  };
  return {
    timeMs: timestampMs(f['time']) ?? Date.now(), verdict: String(f['verdict'] ?? ''), dropReason: dropReasonOfSummary(f['Summary']),
    source: String(ip['source'] ?? ''), destination: String(ip['destination'] ?? ''), protocol,
    sourcePort: Number(ports['source_port'] ?? 0), destinationPort: Number(ports['destination_port'] ?? 0),
    sourcePod: pod(f['source']), destinationPod: pod(f['destination']),
  };
}

/** The ring's view of the flow: its time and 5-tuple (undefined when it has no addresses). */
export function triggerPoint(f: TriggerFlow): TriggerPoint {
  const src = addressBytes(f.source);
  const dst = addressBytes(f.destination);
  const tuple = src && dst && PROTOS[f.protocol] !== undefined ? { src, dst, proto: PROTOS[f.protocol]!, srcPort: f.sourcePort, dstPort: f.destinationPort } : undefined;
  return { timeMs: f.timeMs, tuple };
}

/** Whether the agent's flow is the trigger (the agent filtered on the rest). */
export function flowMatchesTrigger(f: TriggerFlow, t: ResolvedTrigger): boolean {
  return t.dropReason === undefined || (f.verdict === 'DROPPED' && f.dropReason === t.dropReason);
}

export interface HubbleTriggerOptions {
  /** The folder of the Hubble .proto files (proto/hubble of the package). */
  readonly protoDir: string;
  readonly log: Logger;
  /** How long to keep trying to reach the agent before the capture fails. */
  readonly connectTimeoutMs?: number;
}

/** Follows the agent's flows until one matches the trigger. */
export function hubbleTrigger(t: ResolvedTrigger, o: HubbleTriggerOptions): TriggerSource {
  const def = hubbleProtoFiles(o.protoDir, HUBBLE_PROTO_FILES).definition();
  const pkg = grpc.loadPackageDefinition(def) as unknown as { observer: { Observer: grpc.ServiceClientConstructor } };
  const client = new pkg.observer.Observer(t.hubbleAddress, grpc.credentials.createInsecure()) as unknown as grpc.Client & Obj;
  let call: grpc.ClientReadableStream<Obj> | undefined;
  let closed = false;
  const whitelist = triggerFlowFilters(t);
  const deadline = Date.now() + (o.connectTimeoutMs ?? 30_000);

  const serverStatus = (): Promise<Obj> => new Promise((res, rej) => {
    (client['ServerStatus'] as (req: Obj, opts: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r: Obj) => void) => void)({}, { deadline: Date.now() + 5000 }, (e, r) => (e ? rej(e) : res(r)));
  });

  const armed = (async () => {
    for (;;) {
      try {
        await serverStatus();
        return;
      } catch (e) {
        if (closed) throw new CaptureError('stopped before the trigger was armed');
        if (Date.now() > deadline) {
          throw new CaptureError(`trigger: the agent's Hubble server at ${t.hubbleAddress} does not answer (${(e as grpc.ServiceError).details || (e as Error).message}); a triggered capture needs hubble.enabled on the node's agent (docs/capture.md#triggered-captures)`);
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  })();

  const fired = armed.then(() => new Promise<{ flow: TriggerFlow; point: TriggerPoint; seenAtMs: number }>((resolve, reject) => {
    call = (client['GetFlows'] as (req: Obj) => grpc.ClientReadableStream<Obj>)({ follow: true, whitelist });
    o.log.info('trigger armed', { hubble: t.hubbleAddress, whitelist: JSON.stringify(whitelist), dropReason: t.dropReason });
    call.on('data', (m: Obj) => {
      const raw = m['flow'] as Obj | undefined;
      if (!raw) return;
      const flow = triggerFlowOf(raw);
      if (!flowMatchesTrigger(flow, t)) return;
      const seenAtMs = Date.now();
      call?.cancel();
      resolve({ flow, point: triggerPoint(flow), seenAtMs });
    });
    call.on('error', (e: grpc.ServiceError) => {
      if (closed || e.code === grpc.status.CANCELLED) return;
      reject(new CaptureError(`trigger: the agent's Hubble stream at ${t.hubbleAddress} failed: ${e.details || e.message}`));
    });
    call.on('end', () => {
      if (!closed) reject(new CaptureError(`trigger: the agent's Hubble stream at ${t.hubbleAddress} ended (the agent restarted?) before the trigger`));
    });
  }));
  fired.catch(() => undefined);
  return {
    armed, fired,
    close() {
      closed = true;
      call?.cancel();
      client.close();
    },
  };
}
