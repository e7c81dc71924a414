/**
 * The Linux image index (make image, issue 41): build/image/oci-linux's tag `<version>` and
 * retina-ts-linux.oci.tar name one OCI image index holding the linux/amd64 and linux/arm64 images, which are
 * the architectures' own layouts (oci-linux-<arch>), carry the same content list (once the architectures'
 * names in paths are set aside), and each run its own machine's code: node, koffi's native module and
 * node's program interpreter, resolved inside that image's root. The arm64 image running the agent on an
 * arm64 kernel is test/kernels/arm64.test.ts.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from '../e2e/agent-process.js';
import { elfInterpreter, elfMachine, resolveInRoot } from './elf.js';
import { requireImageTools } from './runc.js';
import { agentNodeFlags } from './serving.js';

const OUT = join(ROOT, 'build', 'image');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const ARCHES = { amd64: { machine: 62, koffi: 'linux_x64' }, arm64: { machine: 183, koffi: 'linux_arm64' } } as const;
type Arch = keyof typeof ARCHES;

interface Descriptor { readonly mediaType: string; readonly digest: string; readonly platform?: { architecture: string; os: string } }
const inspectRaw = (ref: string): { mediaType?: string; manifests?: Descriptor[] } => JSON.parse(execFileSync('skopeo', ['inspect', '--raw', ref], { encoding: 'utf8' })) as { mediaType?: string; manifests?: Descriptor[] };

/**
 * glibc's own files per architecture (Debian's libc6): the dynamic loader's name and place (x86-64's in
 * /lib64, aarch64's in /lib; node's PT_INTERP resolving in each root is checked below) and x86-64's vector
 * math library (libmvec: no aarch64 build in glibc 2.36).
 */
const GLIBC_ARCH = /^. \/(lib64(\/[^/]+)?|lib\/ld-linux-[^/]+|lib\/ARCH-linux-gnu\/(ld-linux-[^/]+|libmvec\.so\.1))$/;

/** Every path of a root, with its kind (f, l, d), the architecture's names replaced by ARCH. */
function contentList(root: string): Set<string> {
  const out = new Set<string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      const kind = e.isSymbolicLink() ? 'l' : e.isDirectory() ? 'd' : 'f';
      const entry = `${kind} /${relative(root, p)}`.replace(/x86_64-linux-gnu|aarch64-linux-gnu/g, 'ARCH-linux-gnu').replace(/linux_(x64|arm64)/g, 'linux_ARCH');
      if (!GLIBC_ARCH.test(entry)) out.add(entry);
      if (kind === 'd') walk(p);
    }
  };
  walk(root);
  return out;
}

describe('the Linux image index: linux/amd64 and linux/arm64 under one tag', () => {
  let dir: string;
  const roots = {} as Record<Arch, string>;
  before(() => {
    requireImageTools();
    dir = mkdtempSync(join(tmpdir(), 'retina-index-'));
    for (const a of Object.keys(ARCHES) as Arch[]) {
      execFileSync('umoci', ['raw', 'unpack', '--image', `${join(OUT, `oci-linux-${a}`)}:linux-${a}`, join(dir, a)], { stdio: 'ignore' });
      roots[a] = join(dir, a);
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('the layout and the archive name one index of both architectures\' own manifests', (t) => {
    for (const ref of [`oci:${join(OUT, 'oci-linux')}:${VERSION}`, `oci-archive:${join(OUT, 'retina-ts-linux.oci.tar')}`]) {
      const idx = inspectRaw(ref);
      assert.equal(idx.mediaType, 'application/vnd.oci.image.index.v1+json', ref);
      const platforms = (idx.manifests ?? []).map((m) => `${m.platform?.os}/${m.platform?.architecture}`).sort();
      assert.deepEqual(platforms, ['linux/amd64', 'linux/arm64'], ref);
      for (const a of Object.keys(ARCHES) as Arch[]) {
        const own = JSON.parse(readFileSync(join(OUT, `oci-linux-${a}`, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
        assert.equal(idx.manifests?.find((m) => m.platform?.architecture === a)?.digest, own.manifests[0]?.digest, `${ref}: ${a} is oci-linux-${a}'s image`);
      }
    }
    const sizes = (Object.keys(ARCHES) as Arch[]).map((a) => `${a} ${(statSync(join(OUT, `retina-ts-linux-${a}.oci.tar`)).size / 1e6).toFixed(1)} MB`);
    t.diagnostic(`image sizes (oci-archive): ${sizes.join(', ')}; the index ${(statSync(join(OUT, 'retina-ts-linux.oci.tar')).size / 1e6).toFixed(1)} MB`);
  });

  it('each architecture\'s config: its os and architecture; arm64 starts the agent without the snapshot (made only by a node that runs here)', () => {
    for (const a of Object.keys(ARCHES) as Arch[]) {
      const cfg = JSON.parse(execFileSync('skopeo', ['inspect', '--config', `oci:${join(OUT, `oci-linux-${a}`)}:linux-${a}`], { encoding: 'utf8' })) as { os: string; architecture: string; config: { Entrypoint: string[] } };
      assert.equal(cfg.os, 'linux');
      assert.equal(cfg.architecture, a);
      const snapshot = a === 'amd64' ? ['--snapshot-blob', '/app/retina-agent.blob', '--'] : ['/app/retina-agent.mjs'];
      assert.deepEqual(cfg.config.Entrypoint, ['/usr/local/bin/node', ...agentNodeFlags(), ...snapshot], a);
    }
  });

  it('the same content list in both, but for the start-up snapshot\'s blob (and glibc\'s loader per architecture)', () => {
    const amd = contentList(roots.amd64);
    const arm = contentList(roots.arm64);
    const onlyAmd = [...amd].filter((p) => !arm.has(p));
    const onlyArm = [...arm].filter((p) => !amd.has(p));
    assert.deepEqual(onlyAmd, ['f /app/retina-agent.blob'], 'only in amd64');
    assert.deepEqual(onlyArm, [], 'only in arm64');
  });

  it('the chart pins no architecture: the Linux DaemonSet, the operator and the capture Jobs run on amd64 and arm64 nodes alike', () => {
    const dir = join(ROOT, 'charts', 'retina', 'templates');
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => /\.(ya?ml|tpl)$/.test(f));
    const src = join(ROOT, 'src', 'capture', 'job.ts');
    for (const f of [...files.map((x) => join(dir, x)), src]) assert.doesNotMatch(readFileSync(f, 'utf8'), /kubernetes\.io\/arch|beta\.kubernetes\.io\/arch/, f);
  });

  it('node, its program interpreter and koffi\'s native module are each image\'s machine, and the interpreter resolves in its root', () => {
    for (const a of Object.keys(ARCHES) as Arch[]) {
      const root = roots[a];
      const node = join(root, 'usr', 'local', 'bin', 'node');
      assert.equal(elfMachine(node), ARCHES[a].machine, `${a}: node's machine`);
      const interp = elfInterpreter(node);
      const real = resolveInRoot(root, interp);
      assert.ok(real !== undefined && statSync(join(root, real)).isFile(), `${a}: ${interp} (node's PT_INTERP) is not in the image's root: ${real ?? 'a broken link'}`);
      assert.equal(elfMachine(join(root, real)), ARCHES[a].machine, `${a}: ${interp}'s machine`);
      assert.equal(elfMachine(join(root, 'app', 'build', 'koffi', ARCHES[a].koffi, 'koffi.node')), ARCHES[a].machine, `${a}: koffi's native module`);
    }
  });
});
