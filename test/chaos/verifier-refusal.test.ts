/**
 * Chaos: a kernel that refuses a program. The agent runs from a copy of the package whose
 * tcpretrans object is built from the real source with one line added: a read through a pointer
 * made of a random number, which the verifier refuses ("invalid mem access 'scalar'"), as a kernel
 * whose verifier is stricter than the one the object was tested on would refuse it. Nothing in the
 * agent knows: it loads native-linux/<name>/<name>.bpf.o under its package root, as in production.
 * The log must name the program and the verifier's reason (before the fix, the reason was cut off:
 * libbpf's message was formatted into 1 KiB and the error kept its first instructions); tcpretrans
 * fails alone, the other plugins keep running, /readyz says which failed and why.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { arch, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ROOT, nodeBinary } from '../e2e/agent-process.js';
import { Netns, NsAgent, requireKernel } from '../ebpf/netns.js';

const pkg = mkdtempSync(join(tmpdir(), 'chaos-verifier-'));
let node: Netns | undefined;

/** The package copy: dist and package.json copied, node_modules and the good objects linked, tcpretrans broken. */
before(() => {
  requireKernel();
  cpSync(`${ROOT}dist`, join(pkg, 'dist'), { recursive: true });
  cpSync(`${ROOT}package.json`, join(pkg, 'package.json'));
  symlinkSync(`${ROOT}node_modules`, join(pkg, 'node_modules'));
  for (const o of ['packetforward', 'dropreason', 'dns', 'packetparser']) {
    mkdirSync(join(pkg, 'native-linux', o), { recursive: true });
    symlinkSync(`${ROOT}native-linux/${o}/${o}.bpf.o`, join(pkg, 'native-linux', o, `${o}.bpf.o`));
  }
  const dir = join(pkg, 'native-linux', 'tcpretrans');
  mkdirSync(dir, { recursive: true });
  const src = readFileSync(`${ROOT}native-linux/tcpretrans/tcpretrans.bpf.c`, 'utf8');
  const anchor = '\tif (v) {\n';
  assert.ok(src.includes(anchor), 'the injection point is in tcpretrans.bpf.c');
  writeFileSync(join(dir, 'tcpretrans.bpf.c'), src.replace(anchor, `\tif (*(volatile __u32 *)(long)bpf_get_prandom_u32() == 7)\n\t\treturn 0;\n${anchor}`));
  const target = arch() === 'arm64' ? 'arm64' : 'x86';
  const triple = arch() === 'arm64' ? 'aarch64-linux-gnu' : 'x86_64-linux-gnu';
  const clang = ['clang-14', 'clang'].find((c) => {
    try {
      execFileSync('sh', ['-c', `command -v ${c}`]);
      return true;
    } catch {
      return false;
    }
  });
  if (!clang) throw new Error('no clang to build the broken object');
  execFileSync(clang, [
    '-O2', '-g', '-Wall', '-Werror', '-target', 'bpf', `-D__TARGET_ARCH_${target}`, `-I${ROOT}.cache/bpf`, `-I${ROOT}native-linux/include`,
    `-I${ROOT}native-linux/tcpretrans`, `-I/usr/include/${triple}`, '-c', join(dir, 'tcpretrans.bpf.c'), '-o', join(dir, 'tcpretrans.bpf.o'),
  ], { stdio: 'inherit' });
  node = new Netns('ch-verifier');
});

after(() => {
  node?.destroy();
  rmSync(pkg, { recursive: true, force: true });
});

test('a program the verifier refuses: the log names it and the reason; the other plugins keep running', { timeout: 60_000 }, async () => {
  const others = ['packetforward', 'dropreason', 'linuxutil'];
  await using agent = new NsAgent(node as Netns, `enabledPlugin: [tcpretrans, ${others.join(', ')}]\nmetricsIntervalDuration: 500ms\npacketForwardInterfaces: [lo]\n`,
    [nodeBinary(), join(pkg, 'dist/src/cli/agent-main.js')]);
  await agent.started(others);
  const failed = await agent.proc.waitForLog((l) => l.msg === 'plugin failed; not retrying' && l['plugin'] === 'tcpretrans', 'tcpretrans failing');
  const error = String(failed['error']);
  assert.match(error, /the verifier refused program tcpretrans_tp(_err)?: /, error);
  assert.match(error, /invalid mem access 'scalar'/, `the verifier's reason is in the log line: ${error}`);
  assert.ok(error.length < 600, `one readable line, not the whole verifier log (${error.length} characters)`);
  const r = agent.readyz();
  const t = r.plugins.find((p) => p.name === 'tcpretrans');
  assert.equal(t?.state, 'failed');
  assert.match(t?.lastError ?? '', /verifier refused program tcpretrans_tp.*invalid mem access 'scalar'/);
  for (const p of others) assert.equal(r.plugins.find((x) => x.name === p)?.state, 'running', `${p}: ${JSON.stringify(r)}`);
  await agent.until(() => (agent.metrics().includes('networkobservability_tcp_state') ? true : undefined), 'linuxutil series');
  assert.equal(agent.proc.exit, undefined);
});
