/**
 * The one Flow contract (modelled on Cilium's flow.Flow) and the batch pipeline interfaces.
 * Producers hand on one FlowBatch per drain; later stages see Readonly flows.
 */

export { keyHash, partition, partitionOf, type PartitionKey } from './partition.js';
import type { PartitionKey } from './partition.js';

export type Verdict = 'FORWARDED' | 'DROPPED' | 'RETRANSMISSION' | 'DNS';
export type TrafficDirection = 'INGRESS' | 'EGRESS' | 'UNKNOWN';
/** Cilium's observation points, as names. */
export type ObservationPoint = 'FROM_ENDPOINT' | 'TO_ENDPOINT' | 'FROM_NETWORK' | 'TO_NETWORK' | 'TO_STACK' | 'UNKNOWN';

export interface DnsInfo {
  readonly query: string;
  readonly qtype: string;
  readonly rcode: string;
  readonly answers: readonly string[];
  readonly isResponse: boolean;
  readonly numAnswers: number;
}

/** What the enricher knows about one side of a flow. */
export interface Endpoint {
  readonly namespace: string;
  readonly podName: string;
  readonly workloadKind: string;
  readonly workloadName: string;
  readonly service: string;
  readonly nodeName: string;
  readonly zone: string;
  readonly labels: Readonly<Record<string, string>>;
}

export interface Flow {
  /** Wall-clock time of the observation, ms since the epoch (fractional: sub-ms precision). */
  timeMs: number;
  srcIp: string;
  dstIp: string;
  /** 4 or 6. */
  ipVersion: 4 | 6;
  /** IANA protocol number (6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6). */
  proto: number;
  srcPort: number;
  dstPort: number;
  /** TCP flags bitmask: FIN 1, SYN 2, RST 4, PSH 8, ACK 16, URG 32, ECE 64, CWR 128, NS 256. */
  tcpFlags: number;
  /** TCP timestamp option (RFC 7323) values, 0 when absent: they pair a request with its reply. */
  tcpTsval: number;
  tcpTsecr: number;
  verdict: Verdict;
  /** Kernel drop-reason name (Linux) or PktMon's (Windows); '' unless DROPPED. */
  dropReason: string;
  direction: TrafficDirection;
  observationPoint: ObservationPoint;
  isReply: boolean | undefined;
  packets: number;
  bytes: number;
  /**
   * Packets per TCP flag when this flow aggregates several packets (packetparser at high
   * aggregation), slots as TCP_FLAG_SLOTS; undefined when every packet carried `tcpFlags`.
   */
  tcpFlagCounts: readonly number[] | undefined;
  dns: DnsInfo | undefined;
  nodeName: string;
  /** Filled by the enricher only. */
  source: Endpoint | undefined;
  destination: Endpoint | undefined;
}

/** Slots of Flow.tcpFlagCounts (a SYN with ACK counts as SYNACK only, ACK only without SYN). */
export const TCP_FLAG_SLOTS = ['FIN', 'SYN', 'SYNACK', 'RST', 'PSH', 'ACK', 'URG', 'ECE', 'CWR', 'NS'] as const;

export interface FlowBatch {
  /** The producing plugin's name. */
  readonly source: string;
  readonly flows: readonly Flow[];
}

/** A pipeline stage: synchronous, cheap, never throws. */
export interface FlowConsumer {
  consume(batch: FlowBatch): void;
  /**
   * Off-thread decoding (the pipeline's workers, `pipelineWorkers` > 0): a sink for one source's raw
   * records, decoded, enriched and counted in worker threads by the decoder module `ref` names; or
   * undefined (no workers, or nothing counts flows): the source then decodes and calls `consume`.
   */
  openRaw?(ref: RawDecoderRef): RawRecordSink | undefined;
}

/** Which module decodes a source's raw records in a worker thread, and with what (structured-clonable) options. */
export interface RawDecoderRef {
  readonly source: string;
  /** URL of an ES module exporting `createRawDecoder(options): RawDecoder`. */
  readonly module: string;
  readonly options: unknown;
  /**
   * The bytes of a record that pick its worker (a hash of them, partition.ts), so that the records of
   * one series go to one worker (packetparser: the hash of the source and destination addresses its
   * kernel program writes in the record); without it, each slot goes to the least backlogged worker.
   */
  readonly partitionKey?: PartitionKey;
}

/** What a raw decoder module's `createRawDecoder` returns (it runs in a worker thread). */
export interface RawDecoder {
  /** A new hand-off batch starts; `param` is the sink's `param` when its records were pushed. */
  batch(param: number): void;
  decode(view: DataView, offset: number, size: number): Flow;
}

/** A raw decoder module's shape. */
export interface RawDecoderModule {
  createRawDecoder(options: unknown): RawDecoder;
}

/**
 * Where a source copies its raw records for the workers (never blocks: a record that finds no room
 * is counted lost by the sink, lost_events_counter{type="pipeline", reason="worker_backlog"}).
 */
export interface RawRecordSink {
  /** What the decoder's `batch` gets with the records pushed from now on (packetparser: its clock offset). */
  param: number;
  /** Copies one record (`size` bytes at `offset` of `view`). */
  push(view: DataView, offset: number, size: number): void;
  /**
   * The same for a record read in place from a BPF ring buffer's mapping (its 8-byte header just
   * before `offset`, as a ring reader's decode gets it): adjacent records are copied as one run, the
   * run whole to every worker, each counting its partitions' records (cheaper for this thread than
   * copying each record to its worker; pipeline/handoff.ts; with more than 16 workers, each record is
   * copied to its worker as `push` does). The run is copied at `copyRun` or
   * `flush`: the source calls `copyRun` before the ring's space is given back to the kernel.
   */
  pushRing(view: DataView, offset: number, size: number): void;
  /** Copies the records `pushRing` holds (their ring space is about to be given back). */
  copyRun(): void;
  /** Hands what was pushed since the last flush to the workers (a source calls it at the end of each drain). */
  flush(): void;
  /**
   * Whether this thread still wants the decoded flows (Hubble, flow-log exporters, API-server
   * latency): then the source decodes as well and hands them to `consume`, in drain order.
   */
  readonly wantsFlows: boolean;
  /** This thread's consumers of the source's flows (the workers count them: not counted again). */
  consume(batch: FlowBatch): void;
}

/**
 * A Flow with every field at its default: the one object literal flows come from, so every Flow has
 * the same shape (one V8 hidden class). Hot decoders fill it field by field; everything else uses
 * `createFlow`.
 */
export function newFlow(verdict: Verdict): Flow {
  return {
    timeMs: 0,
    srcIp: '',
    dstIp: '',
    ipVersion: 4,
    proto: 0,
    srcPort: 0,
    dstPort: 0,
    tcpFlags: 0,
    tcpTsval: 0,
    tcpTsecr: 0,
    verdict,
    dropReason: '',
    direction: 'UNKNOWN',
    observationPoint: 'UNKNOWN',
    isReply: undefined,
    packets: 1,
    bytes: 0,
    tcpFlagCounts: undefined,
    dns: undefined,
    nodeName: '',
    source: undefined,
    destination: undefined,
  };
}

/**
 * A Flow from the fields given (the others at their defaults; `ipVersion` from the source address,
 * `timeMs` now). For decoders off the hot path and for tests.
 */
export function createFlow(init: Partial<Flow> & Pick<Flow, 'srcIp' | 'dstIp' | 'verdict'>): Flow {
  const f = newFlow(init.verdict) as unknown as Record<string, unknown>;
  for (const k in init) {
    const v = (init as Record<string, unknown>)[k];
    if (v !== undefined) f[k] = v;
  }
  const flow = f as unknown as Flow;
  if (init.ipVersion === undefined) flow.ipVersion = init.srcIp.includes(':') ? 6 : 4;
  if (init.timeMs === undefined) flow.timeMs = Date.now();
  return flow;
}

/**
 * Hands each batch to every consumer; a consumer that throws is counted through `onError` and the
 * error stops there.
 */
export function fanOut(consumers: readonly FlowConsumer[], onError: (err: unknown, index: number) => void = () => undefined): FlowConsumer {
  if (consumers.length === 1) {
    const only = consumers[0] as FlowConsumer;
    return { consume: (b) => { try { only.consume(b); } catch (e) { onError(e, 0); } } };
  }
  return {
    consume(batch) {
      for (let i = 0; i < consumers.length; i++) {
        try {
          (consumers[i] as FlowConsumer).consume(batch);
        } catch (e) {
          onError(e, i);
        }
      }
    },
  };
}

export { ipAt, ipv4At, ipv6At, createAddressNames, type AddressNames } from './addr.js';
