/**
 * The Linux image run with runc (make image): unpacked with umoci, started in a network namespace
 * the test made with exactly the chart's capabilities (charts/retina/values.yaml,
 * agent.linux.capabilities) and the chart's mounts. Every default plugin runs and /metrics answers;
 * without any one of the capabilities, a default plugin fails (the list is minimal). Reports the
 * agent's start time and RSS in the image.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { ROOT } from '../e2e/agent-process.js';
import { requireKernel, type Netns } from '../ebpf/netns.js';
import { elfInterpreter, resolveInRoot } from './elf.js';
import { IMAGE_LAYOUT, IMAGE_TAG, RuncAgent, configure, requireImageTools, unpackImage } from './runc.js';
import { agentNodeFlags, assertServing, curlIn, failedPlugins, routedNetns, rssMiB, untilReady } from './serving.js';

/** The chart's list (values.yaml, agent.linux.capabilities). */
function chartCapabilities(): string[] {
  const values = parse(readFileSync(join(ROOT, 'charts', 'retina', 'values.yaml'), 'utf8')) as { agent?: { linux?: { capabilities?: unknown } } };
  const caps = values.agent?.linux?.capabilities;
  if (!Array.isArray(caps) || caps.length === 0 || !caps.every((c) => typeof c === 'string')) throw new Error('charts/retina/values.yaml: agent.linux.capabilities is not a list of capability names');
  return caps as string[];
}

const PORT = 10093; // the agent's default port, as the chart runs it

describe('the Linux image under runc', () => {
  let dir: string;
  let seq = 0;
  before(() => {
    requireKernel();
    requireImageTools();
    dir = mkdtempSync(join(tmpdir(), 'retina-runc-'));
    unpackImage(dir);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs the image with `caps` in a fresh namespace; `check` sees /readyz once ready or a plugin failed. */
  async function run<T>(caps: readonly string[], check: (readyz: { status: number; body: string }, ns: Netns, agent: RuncAgent, startMs: number) => T): Promise<T> {
    const { ns, peer } = routedNetns(`runc${seq}`, 72);
    try {
      configure(dir, ns, caps);
      const t0 = Date.now();
      await using agent = new RuncAgent(`retina-test-${process.pid}-${seq++}`, dir);
      await agent.proc.listening(30_000);
      const readyz = await untilReady(() => curlIn(ns, PORT, '/readyz'), 20_000);
      return check(readyz, ns, agent, Date.now() - t0);
    } finally {
      ns.destroy();
      peer.destroy();
    }
  }

  it('the image config: entrypoint with bin/retina-agent\'s node flags and the start-up snapshot, labels, no compiler', () => {
    const cfg = JSON.parse(execFileSync('skopeo', ['inspect', '--config', `oci:${IMAGE_LAYOUT}:${IMAGE_TAG}`], { encoding: 'utf8' })) as {
      os: string;
      config: { Entrypoint: string[]; Labels: Record<string, string> };
    };
    assert.equal(cfg.os, 'linux');
    assert.deepEqual(cfg.config.Entrypoint, ['/usr/local/bin/node', ...agentNodeFlags(), '--snapshot-blob', '/app/retina-agent.blob', '--']);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    assert.equal(cfg.config.Labels['org.opencontainers.image.version'], pkg.version);
    assert.ok(cfg.config.Labels['org.opencontainers.image.source'], 'source label');
    for (const kind of ['oci', 'docker']) {
      const archive = join(ROOT, 'build', 'image', `retina-ts-${IMAGE_TAG}.${kind}.tar`);
      const inspected = JSON.parse(execFileSync('skopeo', ['inspect', `${kind}-archive:${archive}`], { encoding: 'utf8' })) as { Os: string; Labels: Record<string, string> };
      assert.equal(inspected.Os, 'linux', archive);
      assert.equal(inspected.Labels['org.opencontainers.image.version'], pkg.version, archive);
    }
    const bins = readdirSync(join(dir, 'rootfs', 'usr', 'bin'));
    assert.deepEqual(bins.filter((b) => /^(cc|c\+\+|gcc|g\+\+|clang|ld|as)(-\d+)?$/.test(b)), [], 'no compiler in the image');
    assert.ok(bins.includes('tcpdump'), 'tcpdump for captures');
    // The capture workload's metadata tools run in the image (their libraries are all there).
    for (const cmd of [['/usr/bin/tcpdump', '--version'], ['/bin/ip', '-V'], ['/bin/ss', '-V'], ['/usr/sbin/nft', '--version'], ['/usr/sbin/iptables-save', '--version'], ['/usr/sbin/iptables-legacy-save', '--version']]) {
      execFileSync('chroot', [join(dir, 'rootfs'), ...cmd], { stdio: 'pipe' });
    }
    assert.ok(existsSync(join(dir, 'rootfs', 'etc', 'ssl', 'certs', 'ca-certificates.crt')), 'CA bundle');
  });

  it('the dynamic loader node asks for is in the image (an image from another Debian suite once had none at /lib64)', () => {
    const root = join(dir, 'rootfs');
    const interp = elfInterpreter(join(root, 'usr', 'local', 'bin', 'node'));
    assert.match(interp, /^\/lib(64)?\/ld-linux/, `node's PT_INTERP ${interp}`);
    const real = resolveInRoot(root, interp);
    assert.ok(real !== undefined && statSync(join(root, real)).isFile(), `${interp} (node's PT_INTERP) is not in the image's root: ${real ?? 'a broken link'}`);
  });

  it('with the chart\'s capabilities, every default plugin runs and /metrics answers', async (t) => {
    const caps = chartCapabilities();
    const figures = await run(caps, (readyz, ns, agent, startMs) => {
      assertServing(readyz, ns.run('curl', ['-sf', `http://127.0.0.1:${PORT}/metrics`]));
      return { startMs, rssMiB: rssMiB(agent.pid()) };
    });
    t.diagnostic(`capabilities ${caps.join(',')}; agent in the image: start to /readyz 200 ${figures.startMs} ms, RSS (MiB) ${JSON.stringify(figures.rssMiB)}`);
  });

  it('without any one of the chart\'s capabilities, a default plugin fails', async (t) => {
    const caps = chartCapabilities();
    const unneeded: string[] = [];
    for (const cap of caps) {
      const failed = await run(caps.filter((c) => c !== cap), (readyz) => (readyz.status === 200 ? [] : failedPlugins(readyz)));
      t.diagnostic(`without ${cap}: ${failed.length ? `failed ${failed.join(', ')}` : 'all default plugins run'}`);
      if (failed.length === 0) unneeded.push(cap);
    }
    assert.deepEqual(unneeded, [], `capabilities no default plugin needs: ${unneeded.join(', ')}`);
  });
});
