import type { Logger } from '../../src/log/index.js';

export interface CapturedLine { readonly level: string; readonly msg: string; readonly fields?: Record<string, unknown> }

/** A Logger that keeps every line in `lines` (unit tests assert on what was logged). */
export function captureLog(): Logger & { lines: CapturedLine[] } {
  const lines: CapturedLine[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>): void => void lines.push({ level, msg, fields });
  const log = { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log };
  return log;
}
