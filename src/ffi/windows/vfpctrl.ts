/**
 * Runs `vfpctrl /port <id> /get-port-counter` for many ports with few processes: one cmd.exe per
 * batch of ports runs vfpctrl once per port, each output preceded by a marker line, and the text is
 * split back by port. Spawning one process per endpoint per tick (Retina) blocks the event loop
 * while Windows creates each process (under Wine about a second each), which delays /metrics.
 */
import { execFile } from 'node:child_process';

const PORT_RE = /^[0-9A-Za-z{}-]{1,64}$/;
const MARKER = '@@retina-vfp-port';
/** Ports per cmd.exe: keeps the command line far below cmd's 8191 characters. */
export const VFP_BATCH = 40;

/** The cmd.exe command line for `ports` (names checked: only GUID characters reach the shell). */
export function vfpCommand(ports: readonly string[]): string {
  for (const p of ports) if (!PORT_RE.test(p)) throw new Error(`VFP port ${JSON.stringify(p)} is not a port name`);
  return ports.map((p) => `echo ${MARKER} ${p}@@ & call vfpctrl /port ${p} /get-port-counter`).join(' & ');
}

/** Splits a batch's output back into each port's text (a port whose marker is missing is absent). */
export function splitVfpOutput(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const re = new RegExp(`^${MARKER} (\\S+?)@@ ?\\r?$`, 'gm');
  const marks = [...text.matchAll(re)];
  marks.forEach((m, i) => {
    const end = i + 1 < marks.length ? (marks[i + 1] as RegExpMatchArray).index : text.length;
    out.set(m[1] as string, text.slice((m.index as number) + m[0].length, end).replace(/^\r?\n/, ''));
  });
  return out;
}

/** Port → its vfpctrl output; throws when cmd.exe itself cannot run. */
export async function runVfpctrl(ports: readonly string[], timeoutMs = 60_000): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (let i = 0; i < ports.length; i += VFP_BATCH) {
    const batch = ports.slice(i, i + VFP_BATCH);
    const text = await new Promise<string>((resolve, reject) => {
      execFile('cmd.exe', ['/d', '/s', '/c', `"${vfpCommand(batch)}"`], { timeout: timeoutMs, windowsHide: true, windowsVerbatimArguments: true, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
        if (err && !stdout) reject(new Error(`vfpctrl (cmd.exe) failed: ${err.message}${stderr ? `: ${stderr.trim().slice(0, 200)}` : ''}`));
        else resolve(stdout);
      });
    });
    for (const [port, t] of splitVfpOutput(text)) out.set(port, t);
  }
  return out;
}

/** The text of `vfpctrl /list-vmswitch-port /format 1` (every VFP port of the vSwitch, as JSON); throws when cmd.exe cannot run. */
export function runVfpctrlList(timeoutMs = 60_000): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    execFile('cmd.exe', ['/d', '/s', '/c', '"call vfpctrl /list-vmswitch-port /format 1"'], { timeout: timeoutMs, windowsHide: true, windowsVerbatimArguments: true, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err && !stdout) reject(new Error(`vfpctrl /list-vmswitch-port (cmd.exe) failed: ${err.message}${stderr ? `: ${stderr.trim().slice(0, 200)}` : ''}`));
      else resolve(stdout);
    });
  });
}
