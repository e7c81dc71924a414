/**
 * packetparser's decoder in a pipeline worker thread (src/pipeline/worker-thread.ts loads this module
 * by URL, RawDecoderRef): the same createPacketDecoder, with the kernel clock's offset handed over with
 * each batch of raw records instead of read in the worker (no FFI there). Pure.
 */
import { keyHash, type RawDecoder } from '../../../flow/index.js';
import type { KernelClock } from '../ebpf-shared/clock.js';
import { createPacketDecoder } from './decode.js';

export interface RawDecoderOptions {
  readonly nodeName?: string;
}

export function createRawDecoder(options: unknown): RawDecoder {
  const o = (options ?? {}) as RawDecoderOptions;
  let offset = 0;
  const clock: KernelClock = { toMs: (ns) => offset + ns / 1e6, resync: () => undefined, offsetMs: () => offset };
  const decode = createPacketDecoder({ clock, ...(o.nodeName ? { nodeName: o.nodeName } : {}) });
  return {
    batch(param) {
      offset = param;
    },
    decode,
  };
}

/**
 * The reference a plugin hands to `ctx.flows.openRaw`. Empty where this module has no URL: in
 * kubectl-retina's single executable (a CommonJS bundle, no import.meta.url), which loads the plugin
 * list for migrate-values and runs no plugin. Made at load, it stopped that executable ("Invalid URL").
 */
const here = (import.meta as { url?: string }).url;
export const RAW_DECODER_MODULE = here === undefined ? '' : new URL('./raw-decoder.js', here).href;

/**
 * A record's peer_hash (packet_event.h: at 116, the kernel's hash of the source and destination
 * addresses): one pair's records go to one worker, and a worker picking its records from a ring run
 * reads 4 bytes a record, already a hash, instead of hashing 32.
 */
export const RAW_PARTITION_KEY = { offset: 116, length: 4, hashed: true } as const;

/** The peer_hash the kernel writes in the record at `record` of `v` (set_peer_hash): for records made here (tests, benches). */
export const peerHash = (v: DataView, record: number): number => keyHash(v, record + 8, 32);
