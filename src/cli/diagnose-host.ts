/**
 * Host facts for `retina-agent diagnose` on every OS: OS and build or kernel, CPUs, memory and NICs
 * (speed, type, state) from `systeminformation`, loaded only here (the agent never pays for it), each
 * call within a budget. A call that fails or overruns (systeminformation runs helper commands on some
 * systems) falls back to what node:os knows, and the section says so.
 */
import os from 'node:os';
import { beforeDeadline } from '../platform/index.js';

type Si = typeof import('systeminformation');

/** `call`'s answer within `ms`, else `fallback()` with the reason noted in `notes`. */
async function bounded(what: string, ms: number, call: () => Promise<unknown>, fallback: () => unknown, notes: string[]): Promise<unknown> {
  try {
    const r = await beforeDeadline(call(), ms);
    if (r !== 'timeout') return r;
    notes.push(`systeminformation ${what}: no answer within ${ms} ms; node:os used`);
  } catch (e) {
    notes.push(`systeminformation ${what}: ${(e as Error).message}; node:os used`);
  }
  return fallback();
}

export async function hostFacts(timeoutMs: number, load: () => Promise<Si> = () => import('systeminformation')): Promise<unknown> {
  const notes: string[] = [];
  let si: Si | undefined;
  try {
    si = await load();
  } catch (e) {
    notes.push(`systeminformation cannot be loaded: ${(e as Error).message}; node:os used`);
  }
  // The four calls run side by side, each within most of the section's budget, so a slow one falls
  // back to node:os before the section itself runs out of time.
  const ms = Math.max(1, Math.floor(timeoutMs * 0.8));
  const [osFacts, cpu, memory, nics] = await Promise.all([bounded('osInfo', ms, async () => {
    const o = await (si as Si).osInfo();
    return { platform: o.platform, distro: o.distro, release: o.release, kernel: o.kernel, build: o.build || undefined, arch: o.arch, hostname: o.hostname };
  }, () => ({ platform: os.platform(), distro: undefined, release: os.version(), kernel: os.release(), build: undefined, arch: os.arch(), hostname: os.hostname() }), notes),
  bounded('cpu', ms, async () => {
    const c = await (si as Si).cpu();
    return { model: `${c.manufacturer} ${c.brand}`.trim(), cores: c.cores, physicalCores: c.physicalCores, speedGHz: c.speed };
  }, () => ({ model: os.cpus()[0]?.model, cores: os.availableParallelism(), physicalCores: undefined, speedGHz: undefined }), notes),
  bounded('mem', ms, async () => {
    const m = await (si as Si).mem();
    return { totalBytes: m.total, availableBytes: m.available };
  }, () => ({ totalBytes: os.totalmem(), availableBytes: os.freemem() }), notes),
  bounded('networkInterfaces', ms, async () => {
    const list = await (si as Si).networkInterfaces();
    return list.map((n) => ({ name: n.iface, mac: n.mac || undefined, type: n.type || undefined, state: n.operstate, speedMbps: n.speed !== null && n.speed > 0 ? n.speed : undefined, mtu: n.mtu ?? undefined, virtual: n.virtual, default: n.default, ip4: n.ip4 || undefined, ip6: n.ip6 || undefined }));
  }, () => Object.entries(os.networkInterfaces()).map(([name, a]) => ({ name, mac: a?.[0]?.mac, ip4: a?.find((x) => x.family === 'IPv4')?.address, ip6: a?.find((x) => x.family === 'IPv6')?.address })), notes)]);
  return { os: osFacts, cpu, memory, nics, uptimeSeconds: Math.round(os.uptime()), node: process.version, notes };
}
