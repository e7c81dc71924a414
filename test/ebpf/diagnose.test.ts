/**
 * `bin/retina-agent diagnose` on this host, inside a test network namespace: without an agent, and
 * with one running packetforward (clsact) and dropreason, beside a foreign BPF filter and a u32 filter
 * (as in tc-coexist). The JSON names the interfaces, lists our filters as ours and the others as not,
 * our programs (the ones the agent holds) and their maps with fill levels, the running agent's plugin
 * states, our TCX links in TCX mode, and redacts a secret given in the config file and the environment. Diagnose attaches,
 * pins and leaves nothing: the namespace's tc/TCX attachments and /sys/fs/bpf are the same after it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { AGENT_BIN, agentEnv } from '../e2e/agent-process.js';
import { bpfHelper } from './c-helper.js';
import { Netns, NsAgent, bpfIdsOf, requireKernel, sh, vethPair } from './netns.js';
import { attachForeignBpf, attachForeignU32 } from './tc-shared.js';

const EXT = 'rtdiag-ext';
const SECRET = 'hunter2-do-not-print';
const ENV_SECRET = 'env-token-do-not-print';
/** What diagnose may take here, all sections together (each is bounded by --timeout 3s). */
const BOUND_MS = 20_000;

let node: Netns | undefined;
let peer: Netns | undefined;
let agent: NsAgent | undefined;
let dir = '';

interface Section { ok: boolean; tookMs: number; data?: Record<string, unknown>; error?: string }
interface Report { schema: string; os: string; sections: Record<string, Section> }

/** Runs diagnose in the node namespace with the agent's config plus `port`; returns the report and its wall time. */
async function diagnose(port: number): Promise<{ report: Report; ms: number; text: string }> {
  const cfg = join(dir, `diag-${port}.yaml`);
  writeFileSync(cfg, `apiServer:\n  host: 127.0.0.1\n  port: ${port}\nenabledPlugin: [packetforward, dropreason]\npacketForwardInterfaces: [${EXT}]\npacketForwardTcMode: clsact\nazureClientSecret: ${SECRET}\n`);
  const out = join(dir, `report-${port}.json`);
  const start = Date.now();
  await new Promise<void>((resolve, reject) => {
    execFile('ip', ['netns', 'exec', (node as Netns).name, AGENT_BIN, 'diagnose', '--config', cfg, '--output', out, '--timeout', '3s'],
      { env: agentEnv({ RETINA_STORAGE_TOKEN: ENV_SECRET }), timeout: BOUND_MS * 2 },
      (err, _stdout, stderr) => (err ? reject(new Error(`diagnose failed: ${err.message} ${stderr}`)) : resolve()));
  });
  const ms = Date.now() - start;
  const text = readFileSync(out, 'utf8');
  return { report: JSON.parse(text) as Report, ms, text };
}

const data = (r: Report, name: string): Record<string, unknown> => {
  const s = r.sections[name];
  assert.ok(s?.ok, `section ${name} is ok: ${s?.error ?? 'missing'}`);
  return s.data as Record<string, unknown>;
};

/** What is attached in the node namespace (tc clsact and TCX, XDP) and what is pinned. */
function attachments(): string {
  return JSON.stringify([(node as Netns).run('bpftool', ['-j', 'net', 'show']), readdirSync('/sys/fs/bpf').sort()]);
}

function assertRedacted(r: Report, text: string): void {
  assert.ok(!text.includes(SECRET) && !text.includes(ENV_SECRET), 'no secret anywhere in the report');
  const unknown = data(r, 'config')['unknownKeys'] as { key: string; value: unknown }[];
  assert.deepEqual(unknown.find((u) => u.key === 'azureClientSecret')?.value, '[REDACTED]');
  assert.deepEqual(unknown.find((u) => u.key === 'RETINA_STORAGE_TOKEN')?.value, '[REDACTED]');
  const values = data(r, 'config')['values'] as Record<string, { value: unknown; source: string }>;
  assert.deepEqual(values['packetForwardInterfaces'], { value: [EXT], source: 'file' }, 'keys that are not secret are shown');
}

before(() => {
  requireKernel();
  dir = mkdtempSync(join(tmpdir(), 'rtdiag-'));
  node = new Netns('diag');
  peer = new Netns('diagp');
  vethPair(node, EXT, '10.235.1.1', peer, 'rtdiag-peer', '10.235.1.2');
});

after(async () => {
  await agent?.[Symbol.asyncDispose]();
  node?.destroy();
  peer?.destroy();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('diagnose without an agent: exit 0, the interfaces, no agent running, secrets redacted, nothing attached', async () => {
  const before = attachments();
  const { report, ms, text } = await diagnose(19093);
  console.log(`diagnose without an agent took ${ms} ms`);
  assert.ok(ms < BOUND_MS, `diagnose took ${ms} ms`);
  assert.equal(report.schema, 'retina-ts/diagnose/v1');
  assert.equal(report.os, 'linux');
  const ifs = data(report, 'interfaces') as unknown as { name: string; kind?: string; mac?: string; mtu?: number; addresses: string[] }[];
  const ext = ifs.find((i) => i.name === EXT);
  assert.equal(ext?.kind, 'veth');
  assert.match(ext?.mac ?? '', /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
  assert.ok(ext?.addresses.includes('10.235.1.1/24'), `addresses of ${EXT}: ${String(ext?.addresses)}`);
  assert.equal(data(report, 'agent')['running'], false);
  assert.equal(data(report, 'kubernetes')['configured'], false);
  assert.equal(data(report, 'kernel')['btf'], true);
  assertRedacted(report, text);
  assert.equal(attachments(), before, 'diagnose attached or pinned nothing');
});

test('diagnose beside a running agent: our filters as ours, foreign ones not, programs, map fill levels, plugin states', async () => {
  const n = node as Netns;
  // A CNI's filters were there first, on a clsact qdisc of its own.
  n.run('tc', ['qdisc', 'add', 'dev', EXT, 'clsact']);
  const foreignId = attachForeignBpf(n, bpfHelper('test/ebpf/foreign.bpf.c'), EXT, 'ingress', 100);
  attachForeignU32(n, EXT, 'egress', 100);
  agent = new NsAgent(n, `enabledPlugin: [packetforward, dropreason]\npacketForwardInterfaces: [${EXT}]\npacketForwardTcMode: clsact\nmetricsIntervalDuration: 200ms\n`);
  await agent.started(['packetforward', 'dropreason']);
  const held = new Set(bpfIdsOf(agent.proc.pid).progs);
  const beforeAttach = attachments();

  const { report, ms, text } = await diagnose(agent.port);
  console.log(`diagnose with a running agent took ${ms} ms; sections: ${Object.entries(report.sections).map(([k, s]) => `${k} ${s.tookMs} ms`).join(', ')}`);
  assert.ok(ms < BOUND_MS, `diagnose took ${ms} ms`);
  assert.equal(attachments(), beforeAttach, 'diagnose attached or pinned nothing');

  const running = data(report, 'agent');
  assert.equal(running['running'], true);
  const plugins = running['plugins'] as { name: string; state: string }[];
  assert.deepEqual(plugins.map((p) => [p.name, p.state]).sort(), [['dropreason', 'running'], ['packetforward', 'running']]);
  assert.ok(Array.isArray(running['lostEvents']));

  const tc = data(report, 'tc') as { clsact: { interface: string; direction: string; kind: string; program?: string; programId?: number; ours: boolean }[] };
  const on = tc.clsact.filter((f) => f.interface === EXT);
  assert.deepEqual(on.filter((f) => f.ours).map((f) => `${f.direction} ${f.program}`).sort(), ['egress packetforward_e', 'ingress packetforward_i']);
  assert.ok(on.some((f) => !f.ours && f.programId === foreignId && f.program === 'rtbpf_foreign'), 'the foreign BPF filter, not ours');
  assert.ok(on.some((f) => !f.ours && f.kind === 'u32' && f.direction === 'egress'), 'the u32 filter, not ours');

  const bpf = data(report, 'bpf') as {
    programs: { id: number; name: string; object?: string; mapIds: number[] }[];
    maps: { id: number; name: string; type: number; typeName?: string; maxEntries: number; entries?: number; fillPercent?: number }[];
  };
  const mine = bpf.programs.filter((p) => held.has(p.id));
  assert.deepEqual(mine.map((p) => `${p.object}/${p.name}`).sort(), ['dropreason/dropreason_kfre', 'packetforward/packetforward_e', 'packetforward/packetforward_i'].sort());
  const ofType = (type: number, what: string): (typeof bpf.maps)[number] => {
    const ids = new Set(mine.flatMap((p) => p.mapIds));
    const m = bpf.maps.find((x) => ids.has(x.id) && x.type === type);
    assert.ok(m, `${what} among the agent's maps ${JSON.stringify(bpf.maps.map((x) => [x.name, x.type]))}`);
    return m;
  };
  const ring = ofType(27, 'the drop events ring buffer');
  assert.equal(ring.typeName, 'ringbuf');
  assert.ok(ring.maxEntries > 0 && ring.entries === undefined, 'a ring buffer: its size, no keys');
  const counters = ofType(6, 'the forward counters (per-CPU array)');
  assert.equal(counters.entries, undefined, 'an array: every slot exists');
  // The drop-reason table: a per-CPU hash whose keys are only added; diagnose's count lies between two bpftool counts.
  const drops = bpf.maps.find((m) => m.type === 5 && mine.some((p) => p.mapIds.includes(m.id)));
  assert.ok(drops && drops.entries !== undefined && drops.maxEntries > 0, 'the drop-reason hash with a key count');
  const count = (): number => (JSON.parse(sh('bpftool', ['-j', 'map', 'dump', 'id', String(drops.id)])) as unknown[]).length;
  const after = count();
  assert.ok(drops.entries <= after, `diagnose counted ${drops.entries} keys, bpftool ${after} after`);
  assert.equal(drops.fillPercent, Math.round((drops.entries / drops.maxEntries) * 1000) / 10);
  assertRedacted(report, text);
});

test('diagnose beside an agent in TCX mode: its links on the interface, as ours', async () => {
  await agent?.[Symbol.asyncDispose]();
  agent = new NsAgent(node as Netns, `enabledPlugin: [packetforward]\npacketForwardInterfaces: [${EXT}]\npacketForwardTcMode: tcx\n`);
  await agent.started(['packetforward']);
  const links = new Set(bpfIdsOf(agent.proc.pid).links);
  const { report } = await diagnose(agent.port);
  const tc = data(report, 'tc') as { tcx: { interface: string; direction: string; linkId: number; program?: string; ours: boolean }[] };
  const mine = tc.tcx.filter((l) => links.has(l.linkId));
  assert.deepEqual(mine.map((l) => `${l.interface} ${l.direction} ${l.program} ${l.ours}`).sort(), [`${EXT} egress packetforward_e true`, `${EXT} ingress packetforward_i true`]);
});
