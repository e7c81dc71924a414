/** What a process costs, from /proc: wake-ups of every thread, CPU time, RSS by kind (Linux only). */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let ticks: number | undefined;
function clockTicks(): number {
  ticks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return ticks;
}

/** Voluntary context switches of each thread of `pid`, summed by thread name (comm): who woke. */
export function wakeupsByThread(pid: number): Map<string, number> {
  const by = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      const name = /^Name:\s+(.*)$/m.exec(status)?.[1] ?? tid;
      by.set(name, (by.get(name) ?? 0) + Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0));
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return by;
}

/** Voluntary context switches summed over every thread of `pid` (a thread that ended is not counted). */
export function wakeups(pid: number): number {
  let n = 0;
  for (const v of wakeupsByThread(pid).values()) n += v;
  return n;
}

/** utime + stime of `pid` (every thread) in seconds: fields 14 and 15 of /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / clockTicks();
}

/** RSS of `pid` in MB: all, anonymous, file-backed (RssFile + RssShmem: mapped BPF maps count there). */
export function rssSplit(pid: number): { rssMB: number; anonMB: number; fileMB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mb = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) / 1024;
  const r = (x: number): number => Number(x.toFixed(1));
  return { rssMB: r(mb('VmRSS')), anonMB: r(mb('RssAnon')), fileMB: r(mb('RssFile') + mb('RssShmem')) };
}
