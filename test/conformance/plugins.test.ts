/**
 * One conformance suite over every plugin definition of both OS lists (OTel's generated lifecycle
 * test): names, metric families, config keys and docs agree, and every plugin of this OS survives
 * start-stop-start-stop, a second stop, and leaves no resource stack alive. The host running the
 * suite is a supported node (root, a BTF kernel, tc), so a plugin whose hooks it lacks fails here,
 * loudly: only plugins that depend on hardware (HARDWARE below) may lack them, and those must then
 * be refused at start and run their life cycle over a fixture tree instead.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { agentConfig, agentKeys, collectSpecs, loadValues, pick, type ConfigSpec } from '../../src/config/index.js';
import { silentLogger } from '../../src/log/index.js';
import { catalog, createMetricsRegistry } from '../../src/metrics/index.js';
import { currentOs, detect, loadPlugins, missingHooks, type PlatformInfo } from '../../src/platform/index.js';
import { PermanentError, everyIp, liveResourceStacks, type AnyPluginDefinition, type OsName, type PluginContext } from '../../src/plugin/index.js';
import { createInfinibandPlugin } from '../../src/plugins/linux/infiniband/index.js';

const ROOT = new URL('../../../', import.meta.url);
/** Where users read the plugin table: docs/configuration.md (README.md links it). */
const pluginDoc = readFileSync(new URL('docs/configuration.md', ROOT), 'utf8');
const catalogNames = new Set(catalog.allMetrics.map((m) => m.name));

/** Plugins that need hardware a supported node may lack: why, and the same plugin over a fixture. */
const HARDWARE: Readonly<Record<string, { why: string; standIn: () => AnyPluginDefinition }>> = {
  infiniband: {
    why: 'an InfiniBand adapter (/sys/class/infiniband)',
    standIn: () => createInfinibandPlugin({ root: fileURLToPath(new URL('test/fixtures/infiniband/sys', ROOT)) }),
  },
};

/**
 * What the life-cycle test runs for `p` on a host described by `info`: `p` itself when every hook is
 * there; the fixture stand-in of a hardware plugin whose hardware is absent; otherwise it throws,
 * naming the missing hooks (a plugin this node should run cannot attach).
 */
function runnable(p: AnyPluginDefinition, info: PlatformInfo): { def: AnyPluginDefinition; absent?: string[] } {
  const missing = missingHooks(p.hooks, info);
  if (!missing.length) return { def: p };
  const hw = HARDWARE[p.name];
  if (!hw) throw new Error(`${p.name} cannot run on this host, which lacks ${missing.join(', ')}; the conformance host must have every hook of a non-hardware plugin`);
  return { def: hw.standIn(), absent: missing };
}

/** `info` with one hook taken away, as a host without it would report. */
function without(info: PlatformInfo, hook: string): PlatformInfo {
  return {
    ...info,
    btf: hook === 'btf' ? false : info.btf,
    tc: hook === 'tc' ? false : info.tc,
    capabilities: info.capabilities.filter((c) => c !== hook),
    hasTracepoint: (t) => t !== hook && info.hasTracepoint(t),
    hasFile: (f) => f !== hook && info.hasFile(f),
    hasLibrary: (l) => l !== hook && info.hasLibrary(l),
  };
}

function contextFor(def: AnyPluginDefinition, statuses: string[]): { ctx: PluginContext<unknown>; abort: AbortController } {
  const keys = agentKeys({ os: def.os, names: [def.name], defaults: [def.name] });
  const values = loadValues({ env: { RETINA_METRICSINTERVALDURATION: '200ms' }, specs: collectSpecs(keys, def.config as ConfigSpec<object>) });
  const abort = new AbortController();
  const metrics = createMetricsRegistry({ processMetrics: false });
  return {
    abort,
    ctx: {
      config: pick(def.config, values), agent: agentConfig(keys, values), log: silentLogger, metrics,
      self: { lostEvents: () => undefined, parsedPackets: () => undefined },
      flows: undefined, interest: everyIp, signal: abort.signal, // the defaults: no flows wanted
      status: { ok: () => statuses.push('ok'), degraded: (source, r) => statuses.push(`degraded: ${source}: ${r}`), failed: (e) => statuses.push(`failed: ${String(e)}`) },
    },
  };
}

for (const os of ['linux', 'windows'] as OsName[]) {
  describe(`${os} plugin list`, async () => {
    const plugins = await loadPlugins(os);

    it("is the plugin table's list for this OS in docs/configuration.md (so an empty or partial list fails)", () => {
      const label = os === 'linux' ? 'Linux' : 'Windows';
      const rows = [...pluginDoc.matchAll(/^\| `([a-z0-9]+)` \| (Linux|Windows) \| (yes|no) \|/gm)].filter((m) => m[2] === label);
      assert.ok(rows.length > 0, `docs/configuration.md's plugin table has no ${label} row`);
      assert.deepEqual(plugins.map((p) => p.name).sort(), rows.map((m) => m[1]).sort(), `the ${os} plugin list differs from docs/configuration.md's ${label} rows`);
      for (const m of rows) assert.equal(plugins.find((p) => p.name === m[1])?.defaultEnabled, m[3] === 'yes', `${m[1]}: docs/configuration.md says default ${m[3]}`);
    });

    it('has unique names, all of this OS', () => {
      const names = plugins.map((p) => p.name);
      assert.equal(new Set(names).size, names.length, `duplicate plugin names: ${names.join(', ')}`);
      for (const p of plugins) {
        assert.equal(p.os, os, `${p.name} is in the ${os} list but says ${p.os}`);
        assert.match(p.name, /^[a-z0-9]+$/, 'plugin names are one lower-case word, as in enabledPlugin');
      }
    });

    for (const p of plugins) {
      describe(p.name, () => {
        it('emits only catalog families and declares valid default config', () => {
          for (const m of p.emits) assert.ok(catalogNames.has(m.name), `${p.name} emits ${m.name}, which is not in src/metrics/catalog.ts`);
          const keys = agentKeys({ os, names: [p.name], defaults: [] });
          const values = loadValues({ env: {}, specs: collectSpecs(keys, p.config as ConfigSpec<object>) });
          assert.doesNotThrow(() => pick(p.config, values));
        });

        it('is documented: its README lists its metrics and keys, docs/configuration.md names it', () => {
          const file = new URL(`src/plugins/${os}/${p.name}/README.md`, ROOT);
          assert.ok(existsSync(file), `missing src/plugins/${os}/${p.name}/README.md`);
          const doc = readFileSync(file, 'utf8');
          for (const m of p.emits) {
            const short = m.name.replace(/^(controlplane_)?networkobservability_/, '');
            assert.ok(doc.includes(short), `${p.name} README does not mention ${short}`);
          }
          for (const k of Object.values(p.config as ConfigSpec<Record<string, unknown>>)) assert.ok(doc.includes(k.key), `${p.name} README does not document key ${k.key}`);
          assert.ok(pluginDoc.includes(`\`${p.name}\``), `docs/configuration.md does not list plugin ${p.name}`);
        });

        if (os !== currentOs()) return;

        it('finds its hooks on this host (or, hardware absent, is refused) and survives start-stop-start-stop and a second stop, leaving nothing alive', async () => {
          const { def, absent } = runnable(p, await detect(os));
          if (absent) {
            const statuses: string[] = [];
            const live = liveResourceStacks();
            const { ctx, abort } = contextFor(p, statuses);
            await assert.rejects(p.start(ctx), PermanentError, `${p.name} started without ${HARDWARE[p.name]?.why}`);
            abort.abort();
            assert.equal(liveResourceStacks(), live, `${p.name} left resource stacks alive after a refused start`);
          }
          const before = liveResourceStacks();
          for (let round = 0; round < 2; round++) {
            const statuses: string[] = [];
            const { ctx, abort } = contextFor(def, statuses);
            const handle = await def.start(ctx);
            await new Promise((r) => setTimeout(r, 300));
            abort.abort();
            await handle[Symbol.asyncDispose]();
            await handle[Symbol.asyncDispose]();
            assert.ok(!statuses.some((s) => s.startsWith('failed')), `${p.name} reported ${statuses.join('; ')}`);
          }
          assert.equal(liveResourceStacks(), before, `${p.name} left resource stacks alive`);
        });

        it('fails the life-cycle test when this host lacks one of its hooks, unless it is hardware-dependent', async () => {
          const info = await detect(os);
          for (const h of p.hooks) {
            const name = h.kind === 'tracepoint' ? h.target : h.kind === 'file' ? h.path : h.kind === 'library' || h.kind === 'capability' ? h.name : h.kind;
            if (h.kind === 'file' && h.optional) continue;
            const lacking = without(info, name);
            if (HARDWARE[p.name]) assert.ok(runnable(p, lacking).absent?.length, `${p.name} without ${name}: runs its stand-in`);
            else assert.throws(() => runnable(p, lacking), (e: unknown) => e instanceof Error && e.message.startsWith(`${p.name} cannot run on this host, which lacks `), `${p.name} without ${name}`);
          }
        });
      });
    }
  });
}
