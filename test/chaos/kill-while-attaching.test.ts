/**
 * Chaos: the agent SIGKILLed while it attaches. packetparser (pod level) and packetforward run in
 * the real agent in a namespace where pod veths appear one at a time; the agent is killed (-9) after a few of the
 * veths logged "endpoint attached" and before the rest, so it leaves filters on some veths, maybe
 * half a set on one, and none on others. Restarted, it must end with exactly one set of ours on
 * every interface (kernel names from the tc filter dump), all of them programs the running agent
 * holds (none of the dead run's), and a clean stop then leaves none. Both tc modes: clsact (filters
 * outlive their process, the restart must remove them) and tcx (links die with the process: none
 * of the dead run's link ids is left, and the new agent's tcx links, read from its fds' fdinfo since
 * this bpftool (7.1) does not list tcx, are exactly one pair per interface).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { after, afterEach, before, describe, test } from 'node:test';
import { Netns, NsAgent, bpfIdsOf, requireKernel, sh } from '../ebpf/netns.js';
import { filters, isOurs, ourNames } from '../ebpf/tc-shared.js';

const N = 24;
const EXT = 'ch-kx-ext';
const VETHS = Array.from({ length: N }, (_, i) => `ch-kx${i}`);
const DIRS = ['ingress', 'egress'] as const;

let node: Netns | undefined;
let pods: Netns | undefined;

before(() => {
  requireKernel();
  node = new Netns('ch-kx-node');
  pods = new Netns('ch-kx-pods');
  const n = node.name;
  const p = pods.name;
  sh('ip', ['link', 'add', EXT, 'netns', n, 'type', 'veth', 'peer', 'name', 'ch-kx-extp', 'netns', p]);
  node.run('ip', ['link', 'set', EXT, 'up']);
});

/**
 * Adds the pod veths one at a time, 100 ms apart, in the background. The agent attaches each as it appears (one
 * netlink notification, one attach), so a kill after the first few lands while the rest are still to come, however
 * slow the machine: with all 24 present at once, the agent attached them in one synchronous pass and a kill after
 * its third log line could come after the last (a loaded CI run saw it).
 */
function addVethsSlowly(): Promise<void> {
  const n = (node as Netns).name;
  const p = (pods as Netns).name;
  const script = VETHS.map((v, i) => `ip link add ${v} netns ${n} type veth peer name ch-kxp${i} netns ${p} && ip -n ${n} link set ${v} up && sleep 0.1`).join(' && ');
  return new Promise((resolve, reject) => {
    const c = spawn('sh', ['-c', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    c.stderr.on('data', (d: Buffer) => (err += d.toString()));
    c.on('error', reject);
    c.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`adding the pod veths failed (${code}): ${err}`))));
  });
}

/** Removes the pod veths that exist (their peers go with them). */
function removeVeths(): void {
  const n = node as Netns;
  const present = (JSON.parse(n.run('ip', ['-j', 'link', 'show'])) as { ifname: string }[]).map((l) => l.ifname).filter((x) => VETHS.includes(x));
  if (present.length) n.run('ip', ['-batch', '-'], present.map((v) => `link del ${v}`).join('\n') + '\n');
}

after(() => {
  node?.destroy();
  pods?.destroy();
});

const config = (mode: string): string =>
  `enabledPlugin: [packetforward, packetparser]\nenablePodLevel: true\ndataAggregationLevel: low\nmetricsIntervalDuration: 1s\n` +
  `packetForwardInterfaces: [${EXT}]\npacketParserHostInterfaces: [${EXT}]\npacketForwardTcMode: ${mode}\npacketParserTcMode: ${mode}\n`;

/** Our filters (kernel names, sorted) on every interface and direction, and their program ids. */
function ours(): { names: Map<string, string>; ids: number[] } {
  const n = node as Netns;
  const names = new Map<string, string>();
  const ids: number[] = [];
  for (const i of [EXT, ...VETHS]) {
    for (const d of DIRS) {
      names.set(`${i} ${d}`, ourNames(n, i, d).join(','));
      ids.push(...filters(n, i, d).filter(isOurs).map((f) => f.progId ?? -1));
    }
  }
  return { names, ids };
}

/** The tcx links process `pid` holds: "<interface> <direction>" -> kernel program names, sorted. */
function tcxLinksOf(pid: number): Map<string, string> {
  const names = new Map((JSON.parse((node as Netns).run('ip', ['-j', 'link', 'show'])) as { ifindex: number; ifname: string }[]).map((l) => [l.ifindex, l.ifname]));
  const progs = new Map((JSON.parse(sh('bpftool', ['-j', 'prog', 'show'])) as { id: number; name?: string }[]).map((p) => [p.id, p.name ?? '']));
  const out = new Map<string, string[]>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let info = '';
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) !== 'anon_inode:bpf_link') continue;
      info = readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
    } catch {
      continue;
    }
    if (!/^link_type:\s+tcx$/m.test(info)) continue;
    const ifindex = Number(/^ifindex:\s+(\d+)/m.exec(info)?.[1]);
    const dir = /^attach_type:\s+\d+ \((ingress|egress)\)/m.exec(info)?.[1];
    const prog = (progs.get(Number(/^prog_id:\s+(\d+)/m.exec(info)?.[1])) ?? '?').slice(0, 15);
    const key = `${names.get(ifindex) ?? `ifindex ${ifindex}`} ${dir ?? '?'}`;
    out.set(key, [...(out.get(key) ?? []), prog]);
  }
  return new Map([...out].map(([k, v]) => [k, v.sort().join(',')]));
}

/** The ids of every BPF link on this host. */
const linkIds = (): Set<number> => new Set((JSON.parse(sh('bpftool', ['-j', 'link', 'show'])) as { id: number }[]).map((l) => l.id));

const attachedLines = (a: NsAgent): number => a.proc.logLines().filter((l) => l.msg === 'endpoint attached').length;

for (const mode of ['clsact', 'tcx'] as const) {
  describe(`${mode}: SIGKILL while attaching ${N} veths, then a restart`, { timeout: 180_000 }, () => {
    afterEach(removeVeths);
    test('exactly one set of ours on every interface, all held by the new agent; a clean stop leaves none', async () => {
      const killed = new NsAgent(node as Netns, config(mode));
      let deadLinks: readonly number[] = [];
      let adding: Promise<void> | undefined;
      try {
        await killed.started(['packetforward', 'packetparser']);
        adding = addVethsSlowly();
        await killed.proc.waitForLog(() => attachedLines(killed) >= 3, 'three endpoints attached', 60_000);
        // Reading the links walks the process's fds (slow): only tcx needs them, and while it reads,
        // the agent attaches on (a CI run saw all 24 attached before a clsact kill came).
        if (mode === 'tcx') deadLinks = bpfIdsOf(killed.proc.pid).links;
        killed.proc.child.kill('SIGKILL');
        await killed.proc.waitExit(10_000);
      } finally {
        await killed[Symbol.asyncDispose]();
        await adding;
      }
      const at = attachedLines(killed);
      assert.ok(at < N, `killed during the attach (${at} of ${N} endpoints had attached)`);
      const left = ours();
      const withOurs = [...left.names.values()].filter((x) => x !== '').length;
      if (mode === 'clsact') assert.ok(withOurs > 0, 'the killed run left clsact filters behind (the case under test)');
      else {
        assert.equal(withOurs, 0, 'no clsact filters in tcx mode');
        assert.ok(deadLinks.length > 0, 'the killed run held links');
        const live = linkIds();
        assert.deepEqual(deadLinks.filter((id) => live.has(id)), [], 'the dead run\'s links went with it');
      }
      console.log(`${mode}: killed after ${at}/${N} endpoint lines; ${withOurs} interface directions kept filters of the dead run`);

      await using agent = new NsAgent(node as Netns, config(mode));
      await agent.started(['packetforward', 'packetparser']);
      await agent.until(() => (attachedLines(agent) >= N ? true : undefined), `all ${N} veths attached`, 60_000);
      const now = ours();
      const hooks = mode === 'clsact' ? now.names : tcxLinksOf(agent.proc.pid);
      if (mode === 'tcx') assert.deepEqual([...now.names.values()].filter((x) => x !== ''), [], 'no clsact filters in tcx mode');
      for (const d of DIRS) {
        assert.equal(hooks.get(`${EXT} ${d}`), `packetforward_${d[0]},packetparser_ho`, `${EXT} ${d}`);
        for (const v of VETHS) assert.equal(hooks.get(`${v} ${d}`), 'packetparser_en', `${v} ${d}: one hook of ours`);
      }
      assert.equal(hooks.size, 2 * (N + 1), `hooks on our interfaces only: ${JSON.stringify([...hooks])}`);
      const held = new Set(bpfIdsOf(agent.proc.pid).progs);
      for (const id of now.ids) assert.ok(held.has(id) && !left.ids.includes(id), `filter program ${id} belongs to the running agent`);
      const { code } = await agent.terminate();
      assert.equal(code, 0, agent.proc.stderr.slice(-2000));
      assert.deepEqual([...ours().names.values()].filter((x) => x !== ''), [], 'a clean stop leaves none of ours');
    });
  });
}
