/**
 * The user documentation (README.md and docs/) is the user's contract: every agent, plugin and
 * operator key, every metric family, every command, make target, profile, custom resource and
 * Retina difference the contract promises is on the page where users look for it; every relative
 * link and anchor resolves; the chart's values table is what its generator makes of the schema.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { describe, it } from 'node:test';
import { agentKeys, type ConfigSpec } from '../../src/config/index.js';
import { catalog, validateMetricsSpec } from '../../src/metrics/index.js';
import { operatorKeys } from '../../src/operator/index.js';
import { loadPlugins } from '../../src/platform/index.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const readme = read('README.md');
const page = (name: string): string => read(`docs/${name}.md`);

/** The text of a markdown file outside fenced code blocks (headings and links only count there). */
function prose(text: string): string {
  let fenced = false;
  return text.split('\n').filter((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return false;
    }
    return !fenced;
  }).join('\n');
}

/** GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1] ?? '');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** A markdown section: from the heading `title` to the next heading of the same or a higher level. */
function section(text: string, title: string): string {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => new RegExp(`^(#+)\\s+${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*$`).test(l));
  assert.ok(start >= 0, `no heading "${title}"`);
  const level = /^#+/.exec(lines[start] ?? '')?.[0].length ?? 1;
  const end = lines.findIndex((l, i) => i > start && (/^#+/.exec(l)?.[0].length ?? 99) <= level);
  return lines.slice(start, end < 0 ? undefined : end).join('\n');
}

const DOC_FILES = ['README.md', 'charts/retina/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

describe('README.md', () => {
  it('is short: at most about 200 lines', () => {
    const lines = readme.split('\n').length;
    assert.ok(lines <= 210, `README.md has ${lines} lines; move detail into docs/`);
  });

  it('gives the install and the two set-up commands', () => {
    assert.match(readme, /helm install retina charts\/retina -n kube-system -f charts\/retina\/profiles\//);
    assert.match(readme, /make image/);
    assert.match(readme, /make run/);
    assert.match(readme, /make test/);
  });

  it('lists every command of package.json bin, and diagnose', () => {
    const bin = (JSON.parse(read('package.json')) as { bin: Record<string, string> }).bin;
    for (const name of Object.keys(bin)) assert.ok(readme.includes(`\`${name}`), `README.md does not list the command ${name}`);
    assert.ok(readme.includes('`retina-agent diagnose'), 'README.md does not list retina-agent diagnose');
    const table = section(page('configuration'), 'Commands and exit status');
    const tick = '`';
    for (const name of [...Object.keys(bin), 'retina-agent diagnose']) assert.match(table, new RegExp(`^\\| ${tick}${name}[ ${tick}]`, 'm'), `docs/configuration.md's command table has no row for ${name}`);
  });

  it('links the user pages from "Where next", and no docs/ page is an orphan', () => {
    const next = section(readme, 'Where next');
    for (const f of ['install', 'configuration', 'metrics', 'pod-level', 'capture', 'hubble', 'windows', 'troubleshooting', 'development']) {
      assert.ok(next.includes(`(docs/${f}.md)`), `README.md's "Where next" does not link docs/${f}.md`);
    }
    for (const f of DOC_FILES.filter((f) => f.startsWith('docs/'))) {
      const name = f.slice('docs/'.length);
      const linked = readme.includes(`(${f})`) || DOC_FILES.some((g) => g !== f && g.startsWith('docs/') && new RegExp(`\\]\\(${name.replace('.', '\\.')}(#[^)]*)?\\)`).test(read(g)));
      assert.ok(linked, `${f} is linked from neither README.md nor another docs/ page`);
    }
  });

  it('states each Retina difference the contract names, in the compatibility table', () => {
    const table = section(readme, 'Retina compatibility');
    const quirks: [string, RegExp][] = [
      ['Windows node totals are sums over endpoints', /sums over endpoints/i],
      ['pod labels are kept on RetinaEndpoints', /pod labels are kept on RetinaEndpoints/],
      ['the service context label is filled', /`service` label is filled/],
      ['IPv6 flows are enriched', /IPv6.*flows enriched/],
      ['API-server latency spans second boundaries', /second boundaries/],
      ['interface_stats is per interface', /`interface_stats`.*one series per interface/],
      ['one failing plugin never takes the agent down', /one failing plugin never takes the agent down/],
      ["deleted pods' series disappear", /deleted pods' series disappear/],
    ];
    for (const [what, re] of quirks) assert.match(table, re, `README.md's compatibility table does not say: ${what}`);
  });
});

describe('docs/configuration.md', () => {
  const doc = page('configuration');

  it('documents every agent configuration key with its default', () => {
    for (const os of ['linux', 'windows'] as const) {
      const keys = agentKeys({ os, names: [], defaults: [] });
      for (const k of Object.values(keys)) assert.ok(doc.includes(`| \`${k.key}\` |`), `docs/configuration.md has no row for agent key ${k.key}`);
    }
  });

  it("documents every plugin's keys, and names every plugin in its plugin table", async () => {
    const keys = section(doc, 'Plugin keys');
    const plugins = [...(await loadPlugins('linux')), ...(await loadPlugins('windows'))];
    for (const p of plugins) {
      for (const k of Object.values(p.config as ConfigSpec<Record<string, unknown>>)) assert.ok(keys.includes(`| \`${k.key}\` | ${p.name} |`), `docs/configuration.md has no row for ${p.name}'s key ${k.key}`);
      assert.match(section(doc, 'Plugins'), new RegExp(`^\\| \`${p.name}\` \\| (Linux|Windows) \\| (yes|no) \\|`, 'm'), `docs/configuration.md's plugin table has no row for ${p.name}`);
    }
  });

  it('documents every operator key', () => {
    const table = section(doc, 'Operator keys');
    for (const k of Object.values(operatorKeys())) {
      const group = `\`${k.key.split('.')[0]}.*\``;
      assert.ok(table.includes(`\`${k.key}\``) || (k.key.includes('.') && table.includes(group)), `docs/configuration.md's operator table does not list ${k.key}`);
    }
  });

  it('gives the exit statuses', () => {
    for (const code of ['0', '1', '2', '70']) assert.match(section(doc, 'Commands and exit status'), new RegExp(`\\b${code}\\b`));
  });
});

describe('docs/metrics.md', () => {
  const doc = page('metrics');

  it('documents every metric family of the catalog', () => {
    for (const m of catalog.allMetrics) {
      const short = m.name.replace(/^networkobservability_/, '');
      assert.ok(doc.includes(`\`${short}\``) || doc.includes(`\`${m.name}\``), `docs/metrics.md does not list ${m.name}`);
    }
  });

  it('documents every metric family a plugin emits', async () => {
    for (const p of [...(await loadPlugins('linux')), ...(await loadPlugins('windows'))]) {
      for (const m of p.emits) {
        const short = m.name.replace(/^networkobservability_/, '');
        assert.ok(doc.includes(`\`${short}\``) || doc.includes(`\`${m.name}\``), `docs/metrics.md does not list ${m.name} (emitted by ${p.name})`);
      }
    }
  });

  it('documents the HTTP endpoints of the agent and the operator', () => {
    const http = section(doc, 'HTTP endpoints');
    for (const path of ['GET /metrics', 'GET /healthz', 'GET /readyz', '10093', ':8080', ':8081']) assert.ok(http.includes(path), `docs/metrics.md's HTTP endpoints do not mention ${path}`);
  });
});

describe('the other pages', () => {
  it('docs/install.md names every chart profile, AKS, upgrade and rollback, and the kernels per node image', () => {
    const doc = page('install');
    for (const f of readdirSync(join(ROOT, 'charts/retina/profiles'))) {
      const name = f.replace(/\.yaml$/, '');
      assert.match(doc, new RegExp(`^\\| \`${name}\` \\|`, 'm'), `docs/install.md's profile table has no row for ${name}`);
    }
    for (const h of ['Images', 'AKS', 'Verify the install', 'Upgrade and rollback', 'Kernel support per AKS node image']) section(doc, h);
    assert.ok(doc.includes('(kernels.md)'), 'docs/install.md does not link docs/kernels.md');
  });

  it('docs/development.md documents every make target the contract names', () => {
    const doc = page('development');
    for (const t of ['build', 'test', 'run', 'bench', 'lint', 'k8s-up', 'k8s-down', 'test-windows', 'image', 'fuzz', 'soak', 'chart-docs']) {
      assert.ok(doc.includes(`\`make ${t}\``), `docs/development.md does not document make ${t}`);
    }
    assert.ok(doc.includes('(architecture.md)') && doc.includes('(real-node.md)'), 'docs/development.md links architecture.md and real-node.md');
  });

  it('docs/pod-level.md documents every custom resource', () => {
    const doc = page('pod-level');
    for (const f of readdirSync(join(ROOT, 'charts/retina/crds'))) {
      const kind = /^\s+kind: (\w+)$/m.exec(read(`charts/retina/crds/${f}`))?.[1];
      assert.ok(kind && doc.includes(`\`${kind}\``), `docs/pod-level.md does not document the custom resource in ${f}`);
    }
  });

  it("docs/pod-level.md's MetricsConfiguration example is accepted by the operator's validator, with nothing ignored", () => {
    const block = /```yaml\n(apiVersion: retina\.sh\/v1alpha1\nkind: MetricsConfiguration\n[\s\S]*?)```/.exec(page('pod-level'))?.[1];
    assert.ok(block, 'docs/pod-level.md has no MetricsConfiguration example');
    const check = validateMetricsSpec((parseYaml(block) as { spec: unknown }).spec);
    assert.deepEqual({ errors: check.errors, warnings: check.warnings }, { errors: [], warnings: [] });
  });

  it('docs/hubble.md says how to reach the Hubble API', () => {
    const doc = page('hubble');
    assert.match(doc, /hubble observe --server <node IP>:4244/);
    assert.match(doc, /hubble-relay/);
  });

  it('docs/windows.md runs diagnose through kubectl exec in the HostProcess pod', () => {
    const doc = page('windows');
    assert.match(doc, /kubectl -n kube-system exec \$pod -- powershell\.exe/);
    assert.match(doc, /retina-agent\.mjs" diagnose/);
  });

  it('has a LICENSE that matches package.json', () => {
    assert.equal((JSON.parse(read('package.json')) as { license: string }).license, 'MIT');
    assert.match(read('LICENSE'), /^MIT License\n\nCopyright \(c\) \d{4} the retina-ts authors\n/);
  });
});

describe('links', () => {
  for (const file of DOC_FILES) {
    it(`every relative link and anchor of ${file} resolves`, () => {
      const text = prose(read(file));
      const problems: string[] = [];
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1] ?? '';
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
        const [path = '', anchor] = target.split('#');
        const abs = path ? resolve(dirname(join(ROOT, file)), path) : join(ROOT, file);
        if (!existsSync(abs)) {
          problems.push(`${target}: no such file ${relative(ROOT, abs)}`);
          continue;
        }
        if (anchor && statSync(abs).isFile() && abs.endsWith('.md') && !anchors(readFileSync(abs, 'utf8')).has(anchor)) {
          problems.push(`${target}: ${relative(ROOT, abs)} has no heading for #${anchor}`);
        }
      }
      assert.deepEqual(problems, [], `${file} has broken links`);
    });
  }
});

describe('charts/retina/README.md values table', () => {
  it('is what hack/chart/values-table.mjs makes of values.schema.json and values.yaml (make chart-docs)', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'hack/chart/values-table.mjs'), '--check'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr || r.stdout);
  });

  it('lists every value of the schema', () => {
    const schema = JSON.parse(read('charts/retina/values.schema.json')) as Schema;
    const table = read('charts/retina/README.md');
    for (const key of leaves(schema, schema, [])) assert.ok(table.includes(`| \`${key}\` |`), `charts/retina/README.md's values table has no row for ${key}`);
  });
});

interface Schema { properties?: Record<string, Schema>; $ref?: string; allOf?: Schema[]; 'x-retina'?: boolean }
/** A local `$ref` followed (the generated schema may share definitions). */
function deref(root: Schema, s: Schema): Schema {
  if (!s.$ref?.startsWith('#/')) return s;
  const target = s.$ref.slice(2).split('/').reduce<unknown>((n, k) => (n as Record<string, unknown> | undefined)?.[k], root) as Schema | undefined;
  assert.ok(target, `values.schema.json: unresolved $ref ${s.$ref}`);
  return deref(root, target);
}
/** Every value's dotted path: the schema's leaves (properties of `allOf` parts included). */
function leaves(root: Schema, s: Schema, path: string[]): string[] {
  const node = deref(root, s);
  // Microsoft Retina's keys, refused by the chart with our key named (docs/migrating-from-retina.md): not values of ours
  if (node['x-retina']) return [];
  const props = Object.assign({}, node.properties, ...(node.allOf ?? []).map((p) => deref(root, p).properties ?? {})) as Record<string, Schema>;
  if (!Object.keys(props).length) return [path.join('.')];
  return Object.entries(props).flatMap(([k, v]) => leaves(root, v, [...path, k]));
}
