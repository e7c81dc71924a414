/**
 * Shared by the Windows suite's pktmon-flow tests (flowlogs.wintest.ts, hubble.wintest.ts): the
 * PktMon events of a real capture (test/fixtures/windows/real, read by the ETL reader) and a
 * PktmonSource that replays what is pushed into it, in place of the live ETW session.
 */
import { readFileSync } from 'node:fs';
import type { EtwEvent } from '../../../src/ffi/windows/index.js';
import type { PktmonSource } from '../../../src/plugins/windows/pktmon/source.js';
import { readEtl } from '../etl/etl.js';

const REAL = new URL('../../../../test/fixtures/windows/real/', import.meta.url);
const PKTMON = '4d4f80d9-c8bd-4d73-bb5b-19c90402c5ac';

/** The PktMon provider's events of a real capture in test/fixtures/windows/real. */
export const capture = (file: string): EtwEvent[] => readEtl(readFileSync(new URL(file, REAL))).events.filter((e) => e.provider === PKTMON);

/** A PktmonSource draining what `push` queued; never loses, ends on close. */
export function memorySource(): PktmonSource & { push(e: EtwEvent[]): void } {
  let queue: EtwEvent[] = [];
  let end: () => void = () => undefined;
  return {
    push: (e) => { queue.push(...e); },
    drain: (max) => { const out = queue.slice(0, max); queue = queue.slice(max); return out; },
    lost: () => 0,
    ended: new Promise<void>((r) => { end = r; }),
    close: async () => { end(); },
  };
}
