/**
 * The JSON text of one delivered batch of flow-log records, made once for every sink the batch goes
 * to: the file sink's line and the OTLP sink's log body are the same string (the line `hubble
 * observe -o json` prints), so with both sinks on a record is stringified once, not once a sink
 * (JSON.stringify was about a third of the OTLP sink's cost). Lazy and per record: a sink that takes
 * only part of a batch (its queue full) does not pay for the rest.
 */
import type { FlowLogRecord, RecordsJson } from './types.js';

export function recordsJson(records: readonly FlowLogRecord[]): RecordsJson {
  // undefined: not made yet; null: the record cannot be written (a cycle, a BigInt).
  const texts: Array<string | null | undefined> = new Array<string | null | undefined>(records.length);
  return {
    at(i) {
      let t = texts[i];
      if (t === undefined) {
        try {
          t = JSON.stringify(records[i]) ?? null;
        } catch {
          t = null;
        }
        texts[i] = t;
      }
      return t ?? undefined;
    },
  };
}
