/** Runs a command-line tool with a time limit and bounded output; never throws (the result says what happened). */
import { execFile } from 'node:child_process';

export interface ToolResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The tool is not installed (ENOENT). */
  readonly notFound: boolean;
  readonly error: string | undefined;
}

export function runTool(cmd: string, args: readonly string[], opts: { timeoutMs?: number; maxBytes?: number; windowsVerbatim?: boolean } = {}): Promise<ToolResult> {
  return new Promise((resolve) => {
    execFile(cmd, [...args], { timeout: opts.timeoutMs ?? 30_000, maxBuffer: opts.maxBytes ?? 16 << 20, encoding: 'utf8', windowsHide: true, windowsVerbatimArguments: opts.windowsVerbatim ?? false }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { code?: number | string; killed?: boolean }) | null;
      const notFound = e?.code === 'ENOENT';
      resolve({
        code: e ? (typeof e.code === 'number' ? e.code : null) : 0, stdout, stderr, notFound,
        error: e ? (notFound ? `${cmd}: not found` : e.killed ? `${cmd}: killed after ${opts.timeoutMs ?? 30_000} ms` : e.message) : undefined,
      });
    });
  });
}
