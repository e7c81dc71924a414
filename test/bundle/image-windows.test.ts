/**
 * The Windows image layer (make image), checked offline (a Windows image cannot run here): an OCI
 * image with os windows whose one layer holds Files/retina-ts/ with node.exe of the Makefile's
 * NODE_VERSION, the bundled commands, koffi's win32 module and the native ETW consumer
 * (native-windows/retina-etw.dll, a PE DLL exporting RetinaEtwDrain) (no Linux module, no eBPF objects),
 * and an entrypoint with bin/retina-agent's node flags; its commands answer --version (run by
 * Linux's node: a Windows image cannot run here).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from '../e2e/agent-process.js';
import { agentNodeFlags } from './serving.js';

const LAYOUT = join(ROOT, 'build', 'image', 'oci-windows-amd64');
const TAG = 'windows-amd64';

describe('the Windows image layer', () => {
  it('is an OCI image for windows/amd64 with node.exe, the bundles and koffi\'s win32 module under Files/', () => {
    if (!existsSync(join(LAYOUT, 'index.json'))) throw new Error(`${LAYOUT} is missing: run make image`);
    const ref = `oci:${LAYOUT}:${TAG}`;
    const cfg = JSON.parse(execFileSync('skopeo', ['inspect', '--config', ref], { encoding: 'utf8' })) as {
      os: string;
      architecture: string;
      config: { Entrypoint: string[]; Labels: Record<string, string> };
    };
    assert.equal(cfg.os, 'windows');
    assert.equal(cfg.architecture, 'amd64');
    assert.deepEqual(cfg.config.Entrypoint, ['retina-ts\\node.exe', ...agentNodeFlags(), 'retina-ts\\retina-agent.mjs']);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    assert.equal(cfg.config.Labels['org.opencontainers.image.version'], pkg.version);

    const { Layers: layers } = JSON.parse(execFileSync('skopeo', ['inspect', ref], { encoding: 'utf8' })) as { Layers: string[] };
    assert.equal(layers.length, 1, 'one layer, meant to sit on the HostProcess base image');
    const blob = join(LAYOUT, 'blobs', ...(layers[0] as string).split(':'));
    // GNU tar fails on a truncated archive (no end-of-archive blocks), which strict readers refuse.
    const entries = execFileSync('tar', ['-tzf', blob], { encoding: 'utf8', maxBuffer: 1 << 24 }).split('\n').filter(Boolean);
    assert.deepEqual(entries.filter((e) => !e.startsWith('Files/')), [], 'a Windows layer names its files under Files/');
    for (const e of ['Files/retina-ts/node.exe', 'Files/retina-ts/retina-agent.mjs', 'Files/retina-ts/retina-operator.mjs', 'Files/retina-ts/package.json', 'Files/retina-ts/build/koffi/win32_x64/koffi.node', 'Files/retina-ts/native-windows/retina-etw.dll']) {
      assert.ok(entries.includes(e), `${e} in the layer`);
    }
    assert.deepEqual(entries.filter((e) => /linux_|\.bpf\.o$/.test(e)), [], 'nothing Linux-only');

    const nodeVersion = /^NODE_VERSION := (\S+)$/m.exec(readFileSync(join(ROOT, 'Makefile'), 'utf8'))?.[1];
    assert.ok(nodeVersion, 'NODE_VERSION in the Makefile');
    const dir = mkdtempSync(join(tmpdir(), 'retina-winlayer-'));
    try {
      execFileSync('tar', ['-xzf', blob, '-C', dir, 'Files/retina-ts/node.exe']);
      const exe = readFileSync(join(dir, 'Files', 'retina-ts', 'node.exe'));
      assert.equal(exe.subarray(0, 2).toString('latin1'), 'MZ', 'node.exe is a Windows executable');
      assert.ok(exe.includes(`v${nodeVersion}`), `node.exe is Node ${nodeVersion}`);
      execFileSync('tar', ['-xzf', blob, '-C', dir, 'Files/retina-ts/native-windows/retina-etw.dll']);
      const dll = readFileSync(join(dir, 'Files', 'retina-ts', 'native-windows', 'retina-etw.dll'));
      assert.equal(dll.subarray(0, 2).toString('latin1'), 'MZ', 'retina-etw.dll is a Windows DLL');
      assert.ok(dll.includes('RetinaEtwDrain'), 'retina-etw.dll exports RetinaEtwDrain');
      // The bundled commands load here too as far as they need no Windows API: --version.
      execFileSync('tar', ['-xzf', blob, '-C', dir]);
      for (const command of ['retina-agent', 'retina-operator']) {
        const v = execFileSync(process.execPath, [join(dir, 'Files', 'retina-ts', `${command}.mjs`), '--version'], { cwd: tmpdir(), encoding: 'utf8' });
        assert.equal(v.trim(), pkg.version, `${command} --version from the layer`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
