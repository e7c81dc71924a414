/**
 * The flow ring: the last `capacity` enriched flows, written by one writer (the agent's drain path,
 * synchronously, one array store per flow) and read by any number of readers that each keep their
 * own position. Writing never waits for a reader: a reader that falls more than `capacity` flows
 * behind finds its next flows overwritten and is told how many it lost (Hubble's LostEvent).
 *
 * Flows are kept by reference: every decoder makes a new Flow per record (newFlow) and nothing
 * after the enricher changes one, so a kept flow stays as it was when it was written.
 * With no client the cost is the store and a counter per flow; followers are woken at most once per
 * batch, and only those waiting.
 */
import type { Flow, FlowBatch, FlowConsumer } from '../../flow/index.js';

export interface RingStats {
  /** Flows in the ring now. */
  readonly size: number;
  readonly capacity: number;
  /** Flows ever written. */
  readonly seen: number;
}

export interface FlowRing extends FlowConsumer {
  readonly capacity: number;
  /** Sequence number of the next flow to be written (= flows ever written). */
  head(): number;
  /** Sequence number of the oldest flow still held. */
  tail(): number;
  /** The flow with sequence number `seq`, or undefined when it is not (or no longer) held. */
  at(seq: number): Readonly<Flow> | undefined;
  /** Calls `wake` once after the next write (a one-shot wait). Returns a cancel. */
  onWrite(wake: () => void): () => void;
  stats(): RingStats;
}

export function createFlowRing(capacity: number): FlowRing {
  if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`flow ring capacity must be a positive integer, got ${capacity}`);
  const slots: (Readonly<Flow> | undefined)[] = new Array<Readonly<Flow> | undefined>(capacity).fill(undefined);
  let head = 0;
  let waiters: (() => void)[] = [];
  const ring: FlowRing = {
    capacity,
    consume(batch: FlowBatch): void {
      const fs = batch.flows;
      for (let i = 0; i < fs.length; i++) {
        slots[head % capacity] = fs[i];
        head++;
      }
      if (waiters.length && fs.length) {
        const w = waiters;
        waiters = [];
        for (const wake of w) wake();
      }
    },
    head: () => head,
    tail: () => Math.max(0, head - capacity),
    at(seq: number) {
      if (seq < 0 || seq >= head || seq < head - capacity) return undefined;
      return slots[seq % capacity];
    },
    onWrite(wake: () => void) {
      waiters.push(wake);
      return () => {
        const i = waiters.indexOf(wake);
        if (i >= 0) waiters.splice(i, 1);
      };
    },
    stats: () => ({ size: Math.min(head, capacity), capacity, seen: head }),
  };
  return ring;
}
