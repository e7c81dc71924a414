/**
 * The Metrics Module's hot path, compiled from one spec: flows in, series values up.
 *
 * Per flow: the verdict picks the metrics that take it; the observation point decides whether this
 * observation is the one that counts on this node (see README.md, "Once per node"); each side's
 * context labels come from a memo keyed by its Endpoint object (context.ts), the pair of sides
 * gives a `Tail` (a memo keyed by object), and the tail keeps the Series each metric last used, by
 * slot (emit.ts). So a flow of a known connection reads three object-keyed Maps (two for a side
 * the enricher did not know: by IP) and adds to numbers: no string is built or hashed, and no
 * closure called. New label sets take the slow path through `SeriesFamily.series`, which also
 * enforces the series budget.
 */
import { TCP_FLAG_SLOTS, type Endpoint, type Flow } from '../../flow/index.js';
import { Budget, SideSpec, replyIndex, sideSignature, type SideKey, type Tail } from './context.js';
import { emit, LOCAL_DIRS, REMOTE_DIRS, type Compiled, type Emitter } from './emit.js';

export type { Emitter } from './emit.js';
import { OP_BYTES, OP_FLAGS, OP_PACKETS, slotCount } from './kinds.js';
import type { RemovalCount } from '../series.js';
import type { ContextLabel } from '../spec.js';

export interface EmitterInit extends Emitter {
  readonly sourceLabels: readonly ContextLabel[];
  /** Remote context only. */
  readonly destinationLabels: readonly ContextLabel[];
  readonly isReply: boolean;
}

interface Group {
  readonly src: SideSpec;
  /** The destination side (remote context); local context uses `src` for both pods. */
  readonly dst: SideSpec;
  readonly reply: boolean;
}

export interface AggregatorOptions {
  readonly remote: boolean;
  /** This node's name, to tell this node's pods apart (remote context); '' = each flow's nodeName. */
  readonly nodeName: string;
  /** The spec's namespace filter; undefined = every endpoint is in scope. */
  readonly inScope: ((ep: Endpoint) => boolean) | undefined;
  /** Most memo objects (side values and tails) kept before the memos start afresh. */
  readonly maxMemo: number;
  /** The removal count the spec's families share (tails forget their series indexes when it moves). */
  readonly removals: RemovalCount;
  /** Pod label keys (metricsPodLabelsAllowlist) labelled on each side with context labels. */
  readonly podLabels?: readonly string[];
}

const NONE: readonly Compiled[] = [];
const EGRESS = 0;
const INGRESS = 1;

export class Aggregator {
  readonly #o: AggregatorOptions;
  readonly #groups: Group[] = [];
  readonly #specs: SideSpec[] = [];
  readonly #budget: Budget;
  readonly #fwd: Compiled[] = [];
  readonly #drop: Compiled[] = [];
  readonly #retrans: Compiled[] = [];
  readonly #dns: Compiled[] = [];
  readonly #srcTails: Tail[];
  readonly #dstTails: Tail[];
  /** Pods seen at their veth on this node, for when node names are unknown. */
  readonly #seenAtVeth = new WeakSet<Endpoint>();

  constructor(emitters: readonly EmitterInit[], o: AggregatorOptions) {
    this.#o = o;
    let slots = 0;
    const specsBySig = new Map<string, SideSpec>();
    const groupsBySig = new Map<string, number>();
    const pending: { e: EmitterInit; slot: number; srcSig: string; dstSig: string }[] = [];
    for (const e of emitters) {
      pending.push({ e, slot: slots, srcSig: sideSignature(e.sourceLabels), dstSig: sideSignature(o.remote ? e.destinationLabels : e.sourceLabels) });
      slots += slotCount(e.kind.op, o.remote);
    }
    this.#budget = new Budget(slots);
    const spec = (labels: readonly ContextLabel[]): SideSpec => {
      const sig = sideSignature(labels);
      let s = specsBySig.get(sig);
      if (s === undefined) {
        specsBySig.set(sig, (s = new SideSpec(labels, this.#budget, o.inScope, o.podLabels)));
        this.#specs.push(s);
      }
      return s;
    };
    for (const { e, slot, srcSig, dstSig } of pending) {
      const gsig = `${srcSig}|${dstSig}|${e.isReply}`;
      let group = groupsBySig.get(gsig);
      if (group === undefined) {
        const src = spec(e.sourceLabels);
        group = this.#groups.push({ src, dst: o.remote ? spec(e.destinationLabels) : src, reply: e.isReply }) - 1;
        groupsBySig.set(gsig, group);
      }
      const op = e.kind.op;
      const c: Compiled = {
        ...e, op, directional: e.kind.directional, group, slot, reasons: new Map(), dirs: o.remote ? REMOTE_DIRS : LOCAL_DIRS,
        prefixes: op === OP_FLAGS ? TCP_FLAG_SLOTS : op === OP_PACKETS || op === OP_BYTES ? (o.remote ? REMOTE_DIRS : LOCAL_DIRS) : [],
      };
      const list = { FORWARDED: this.#fwd, DROPPED: this.#drop, RETRANSMISSION: this.#retrans, DNS: this.#dns }[e.kind.verdict];
      list.push(c);
    }
    this.#srcTails = new Array<Tail>(this.#groups.length);
    this.#dstTails = new Array<Tail>(this.#groups.length);
  }

  /** Drops every memo (they rebuild on the next flows); series are kept. */
  reset(): void {
    for (const s of this.#specs) s.reset();
    this.#budget.used = 0;
  }

  consume(flows: readonly Readonly<Flow>[], t: number): void {
    if (this.#budget.used > this.#o.maxMemo) this.reset();
    const remote = this.#o.remote;
    for (let i = 0; i < flows.length; i++) {
      const f = flows[i] as Readonly<Flow>;
      const v = f.verdict;
      const list = v === 'FORWARDED' ? this.#fwd : v === 'DROPPED' ? this.#drop : v === 'DNS' ? this.#dns : v === 'RETRANSMISSION' ? this.#retrans : NONE;
      if (list.length === 0) continue;
      if (remote) this.#remote(f, list, t);
      else this.#local(f, list, t);
    }
  }

  /**
   * A pod of this node: its endpoint's node is this node. When either name is unknown, the pods
   * whose veth this node has seen (a FROM_ENDPOINT source, a TO_ENDPOINT destination) are.
   */
  #onThisNode(ep: Endpoint | undefined, f: Readonly<Flow>): boolean {
    if (ep === undefined || ep.podName === '') return false;
    const node = this.#o.nodeName || f.nodeName;
    return node !== '' && ep.nodeName !== '' ? ep.nodeName === node : this.#seenAtVeth.has(ep);
  }

  #learn(ep: Endpoint | undefined, f: Readonly<Flow>): void {
    if (ep === undefined || ep.podName === '') return;
    if ((this.#o.nodeName || f.nodeName) !== '' && ep.nodeName !== '') return;
    if (!this.#seenAtVeth.has(ep)) this.#seenAtVeth.add(ep);
  }

  #inScope(ep: Endpoint | undefined): boolean {
    const s = this.#o.inScope;
    return s === undefined || (ep !== undefined && s(ep));
  }

  /** The namespace filter's answer for a side, remembered on its key. */
  #keyInScope(k: SideKey, ep: Endpoint | undefined): boolean {
    const v = k.inScope;
    return v === undefined ? this.#inScope(ep) : v;
  }

  #remote(f: Readonly<Flow>, list: readonly Compiled[], t: number): void {
    const src = f.source;
    const dst = f.destination;
    if (f.verdict === 'FORWARDED') {
      const op = f.observationPoint;
      if (op === 'FROM_ENDPOINT') {
        this.#learn(src, f);
      } else if (op === 'TO_ENDPOINT') {
        this.#learn(dst, f);
        if (this.#onThisNode(src, f)) return; // counted where the source pod sent it
      } else if (op === 'FROM_NETWORK' || op === 'TO_NETWORK') {
        if (this.#onThisNode(src, f) || this.#onThisNode(dst, f)) return; // counted at the pod's veth
      }
    }
    const tails = this.#srcTails;
    const groups = this.#groups;
    for (let g = 0; g < groups.length; g++) {
      const gr = groups[g] as Group;
      const s = gr.src.key(src, f.srcIp, f.srcPort, f.proto);
      const d = gr.dst.key(dst, f.dstIp, f.dstPort, f.proto);
      if (g === 0 && this.#o.inScope !== undefined && !this.#keyInScope(s, src) && !this.#keyInScope(d, dst)) return;
      tails[g] = this.#pairTail(s, d, gr.reply, f);
    }
    const dir = f.direction === 'INGRESS' ? 0 : f.direction === 'EGRESS' ? 1 : 2;
    for (let j = 0; j < list.length; j++) {
      const e = list[j] as Compiled;
      emit(e, f, tails[e.group] as Tail, dir, t);
    }
  }

  #pairTail(s: SideKey, d: SideKey, reply: boolean, f: Readonly<Flow>): Tail {
    const pairs = (s.pairs ??= new WeakMap());
    let tail = pairs.get(d);
    if (tail === undefined) pairs.set(d, (tail = this.#budget.tail(s.frag + d.frag)));
    return (reply ? tail.reply(replyIndex(f.isReply), this.#budget) : tail).valid(this.#o.removals.n);
  }

  #ownTail(k: SideKey, reply: boolean, f: Readonly<Flow>): Tail {
    const tail = (k.own ??= this.#budget.tail(k.frag));
    return (reply ? tail.reply(replyIndex(f.isReply), this.#budget) : tail).valid(this.#o.removals.n);
  }

  #local(f: Readonly<Flow>, list: readonly Compiled[], t: number): void {
    let doSrc = true;
    let doDst = true;
    /** The one pod a non-directional metric (TCP flags, DNS) counts for. */
    let oneDst = f.direction === 'INGRESS';
    if (f.verdict === 'FORWARDED') {
      const op = f.observationPoint;
      if (op === 'FROM_ENDPOINT') {
        doDst = false;
        oneDst = false;
      } else if (op === 'TO_ENDPOINT') {
        doSrc = false;
        oneDst = true;
      } else if (op === 'FROM_NETWORK' || op === 'TO_NETWORK') {
        return; // the host interface: the pods' veths count it
      }
    }
    const src = f.source;
    const dst = f.destination;
    doSrc = doSrc && src !== undefined && src.podName !== '';
    doDst = doDst && dst !== undefined && dst.podName !== '';
    const groups = this.#groups;
    for (let g = 0; g < groups.length; g++) {
      const gr = groups[g] as Group;
      if (doSrc) {
        const k = gr.src.key(src, f.srcIp, f.srcPort, f.proto);
        if (g === 0 && !this.#keyInScope(k, src)) doSrc = false;
        else this.#srcTails[g] = this.#ownTail(k, gr.reply, f);
      }
      if (doDst) {
        const k = gr.src.key(dst, f.dstIp, f.dstPort, f.proto);
        if (g === 0 && !this.#keyInScope(k, dst)) doDst = false;
        else this.#dstTails[g] = this.#ownTail(k, gr.reply, f);
      }
    }
    if (!doSrc && !doDst) return;
    for (let j = 0; j < list.length; j++) {
      const e = list[j] as Compiled;
      if (e.directional) {
        if (doSrc) emit(e, f, this.#srcTails[e.group] as Tail, EGRESS, t);
        if (doDst) emit(e, f, this.#dstTails[e.group] as Tail, INGRESS, t);
      } else if (oneDst ? doDst : doSrc) {
        emit(e, f, (oneDst ? this.#dstTails : this.#srcTails)[e.group] as Tail, 0, t);
      }
    }
  }
}
