/**
 * A download progress bar on stderr: redrawn in place (at most every 100 ms) when stderr is a
 * terminal, otherwise one line when the transfer ends, so logs and CI output stay readable.
 */
export interface ProgressSink {
  write(s: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

const MiB = 1024 * 1024;
const fmt = (n: number): string => (n >= MiB ? `${(n / MiB).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`);

export class Progress {
  private done = 0;
  private lastDraw = 0;
  private readonly started = Date.now();

  constructor(
    private readonly out: ProgressSink,
    private readonly label: string,
    private readonly total: number | undefined,
  ) {}

  get bytes(): number {
    return this.done;
  }

  add(n: number): void {
    this.done += n;
    if (!this.out.isTTY) return;
    const now = Date.now();
    if (now - this.lastDraw < 100) return;
    this.lastDraw = now;
    this.out.write(`\r${this.line()}`);
  }

  finish(): void {
    const secs = Math.max((Date.now() - this.started) / 1000, 0.001);
    const tail = ` in ${secs.toFixed(1)} s (${fmt(this.done / secs)}/s)`;
    this.out.write(`${this.out.isTTY ? '\r' : ''}${this.line()}${tail}\n`);
  }

  private line(): string {
    if (!this.total) return `${this.label} ${fmt(this.done)}`;
    const frac = Math.min(this.done / this.total, 1);
    const width = 24;
    const full = Math.round(frac * width);
    return `${this.label} [${'#'.repeat(full)}${'.'.repeat(width - full)}] ${(frac * 100).toFixed(0).padStart(3)}% ${fmt(this.done)}/${fmt(this.total)}`;
  }
}
