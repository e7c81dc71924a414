/**
 * The agent on an arm64 kernel (issue 41): Debian 12's arm64 kernel (hack/kernels/versions-arm64, fetched by
 * `hack/kernels/fetch.sh arm64`) booted under qemu-system-aarch64 (TCG, -M virt -cpu max; hack/kernels/boot.sh)
 * with the arm64 image's root (build/image/oci-linux-arm64, unpacked here) under the guest's extras (busybox,
 * iproute2, nftables, ethtool, kmod, curl: arm64 packages) and this checkout's dist/ and node_modules read-only
 * over 9p. Inside, the image's arm64 node runs the kernel matrix's suite (suite.ts: every program loaded
 * with the verifier's statistics, then one agent with packetforward, dropreason, dns, tcpretrans and
 * linuxutil counting exactly against the kernel's counters, and packetparser's harness), from the same eBPF
 * objects as amd64 (CO-RE: no program reads pt_regs or an architecture's structs, which the first test
 * checks in their BTF), and the arm64 kubectl-retina executable (`--help`, `migrate-values` on a file, whose
 * output must equal the amd64 executable's). TCG emulating arm64 is slow: the guest proves each plugin once.
 * `make test` runs this file in the kernels lane, after the matrix's guests (hack/test/lanes.mjs).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../e2e/agent-process.js';
import { OBJECTS, guestTimes } from './report.js';
import { GUEST_ENV, SUITE, check, run } from './column.js';

const tools = process.env['RETINA_TOOLS_CACHE'] ?? join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'retina-ts');
const [name, , , version] = readFileSync(join(ROOT, 'hack/kernels/versions-arm64'), 'utf8')
  .split('\n')
  .filter((l) => l.trim() && !l.startsWith('#'))[0]!
  .trim()
  .split(/\s+/) as [string, string, string, string];
const KERNEL = join(tools, 'kernels', `${name}-${version}`);
const LAYOUT = join(ROOT, 'build', 'image', 'oci-linux-arm64');
const PLUGIN = join(ROOT, 'build', 'kubectl-plugin', 'linux-arm64', 'kubectl-retina');
const PLUGIN_HOST = join(ROOT, 'build', 'kubectl-plugin', 'linux-amd64', 'kubectl-retina');
const VALUES = join(ROOT, 'test', 'fixtures', 'retina', 'overrides', 'typical.yaml');

test('one set of eBPF objects serves amd64 and arm64: no program reads pt_regs or user_pt_regs', () => {
  for (const obj of Object.keys(OBJECTS)) {
    const btf = execFileSync('bpftool', ['btf', 'dump', 'file', join(ROOT, 'native-linux', obj, `${obj}.bpf.o`)], { encoding: 'utf8' });
    assert.doesNotMatch(btf, /STRUCT '(user_)?pt_regs'/, `${obj}.bpf.o carries pt_regs: it would need an object per architecture (__TARGET_ARCH_*)`);
  }
});

test(`kernel ${name} (${version}) under qemu-system-aarch64, with the arm64 image's root`, { timeout: 2_700_000 }, async (t) => {
  assert.ok(existsSync(join(KERNEL, '.complete')), `the arm64 kernel is not fetched into ${KERNEL}: hack/kernels/fetch.sh arm64 (make kernels-fetch) fetches it`);
  assert.ok(existsSync(join(LAYOUT, 'index.json')), `no arm64 image at ${LAYOUT}: make image builds it`);
  assert.ok(existsSync(PLUGIN), `no arm64 kubectl-retina at ${PLUGIN}: make kubectl-plugin builds it`);
  const work = mkdtempSync(join(tmpdir(), 'rtk-arm64-'));
  const out = join(work, 'out');
  try {
    execFileSync('umoci', ['raw', 'unpack', '--image', `${LAYOUT}:linux-arm64`, join(work, 'root')], { stdio: 'ignore' });
    execFileSync('mkdir', ['-p', out]);
    const root = ROOT.replace(/\/$/, '');
    // node_modules may be a link out of the checkout (a worktree's): its target is shared at its own path too.
    const modules = realpathSync(join(root, 'node_modules'));
    const shares = [root, ...(modules.startsWith(`${root}/`) ? [] : [modules])];
    writeFileSync(
      join(out, 'run.sh'),
      [
        'set -e',
        `cd '${root}'`,
        // The checkout's .cache holds the host's (amd64) node, which bin/retina-agent would pick: hidden here.
        `mount -t tmpfs tmpfs '${root}/.cache'`,
        `export PATH=/usr/local/bin:/usr/bin:/usr/sbin:/bin:/sbin RETINA_KERNEL_REPORT=/mnt/out/report.json ${GUEST_ENV}`,
        'echo "node $(node -p "process.arch + \' \' + process.version") on $(uname -m) $(uname -r)"',
        // The plugin's failures are the assertions' below (its output kept), not the suite's.
        `'${PLUGIN}' --help >/mnt/out/plugin-help.txt 2>&1 || echo "kubectl-retina --help exited $?"`,
        `'${PLUGIN}' migrate-values -f '${VALUES}' >/mnt/out/plugin-values.yaml 2>/mnt/out/plugin-values.err || echo "kubectl-retina migrate-values exited $?"`,
        'date +%s >/mnt/out/suite-start',
        `node --test --test-concurrency=1 --test-reporter=spec --test-timeout=1800000 '${SUITE}'`,
        '',
      ].join('\n'),
    );
    const t0 = Date.now();
    const boot = await run(join(ROOT, 'hack/kernels/boot.sh'), [KERNEL, out, '2600'], { ...process.env, GUEST_ROOT: join(work, 'root'), GUEST_SHARES: shares.join(' ') });
    const wall = Math.round((Date.now() - t0) / 1000);
    const log = existsSync(join(out, 'run.log')) ? readFileSync(join(out, 'run.log'), 'utf8') : '';
    const report = check(name, boot.code, `${log}\n${boot.out}`, join(out, 'report.json'));
    const suiteStart = Number(readFileSync(join(out, 'suite-start'), 'utf8'));
    const suiteS = Math.round(Date.now() / 1000 - suiteStart);
    assert.match(log, /^node arm64 v\S+ on aarch64 /m, 'the arm64 node on the arm64 kernel');
    t.diagnostic(`${name} ${report.release}: ${wall} s under qemu-system-aarch64 (boot and set-up ${wall - suiteS} s, suite ${suiteS} s)`);
    t.diagnostic(`${name} plugins: ${JSON.stringify(report.plugins)}`);
    t.diagnostic(`${name} counts: ${JSON.stringify(report.counts)}`);
    for (const line of guestTimes(name, log)) t.diagnostic(line);
    for (const p of ['packetforward', 'dropreason', 'dns', 'packetparser']) assert.ok(report.plugins[p]?.loaded, `${p} started on the arm64 kernel: ${JSON.stringify(report.plugins[p])}`);
    // The arm64 kubectl-retina, beside the amd64 one: the same help, the same migrated values.
    const help = readFileSync(join(out, 'plugin-help.txt'), 'utf8');
    assert.match(help, /^usage: kubectl-retina [\s\S]*migrate-values/, `kubectl-retina --help: ${help.slice(0, 2000)}`);
    assert.equal(help, execFileSync(PLUGIN_HOST, ['--help'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }), '--help: the arm64 executable prints what the amd64 one does');
    const want = execFileSync(PLUGIN_HOST, ['migrate-values', '-f', VALUES], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    assert.equal(readFileSync(join(out, 'plugin-values.yaml'), 'utf8'), want, 'migrate-values: the arm64 executable writes what the amd64 one does');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
