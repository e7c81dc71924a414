/**
 * The chart tests' helper: helm and kubeconform from hack/chart/build.sh (built once from Go modules
 * into ~/.cache/retina-ts/chart/bin; the build runs here when it has not, and a failure fails the test), helm
 * run with its own empty HELM_* homes (no repositories, no network), and the rendered objects parsed.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';

const run = promisify(execFile);
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const CHART = join(ROOT, 'charts/retina');
export const PROFILES = readdirSync(join(CHART, 'profiles')).filter((f) => f.endsWith('.yaml')).map((f) => f.slice(0, -5)).sort();
export const profileFile = (p: string): string => join(CHART, 'profiles', `${p}.yaml`);

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [k: string]: unknown;
}

let binDir: Promise<string> | undefined;
/** The tools' directory (builds them the first time: about 5 min of CPU for helm). */
export function tools(): Promise<string> {
  binDir ??= run(join(ROOT, 'hack/chart/build.sh'), [], { cwd: ROOT, maxBuffer: 16 << 20, timeout: 30 * 60_000 })
    .then((r) => r.stdout.trim().split('\n').pop() ?? '')
    .catch((e: unknown) => {
      const err = e as { stderr?: string; message: string };
      throw new Error(`hack/chart/build.sh failed: ${err.message}\n${err.stderr ?? ''}`, { cause: e });
    });
  return binDir;
}

const home = mkdtempSync(join(tmpdir(), 'retina-helm-'));
const helmEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
  PATH: process.env['PATH'] ?? '/usr/bin:/bin',
  HOME: home,
  HELM_CACHE_HOME: join(home, 'cache'), HELM_CONFIG_HOME: join(home, 'config'), HELM_DATA_HOME: join(home, 'data'),
  ...extra,
});

export interface RunResult { code: number; stdout: string; stderr: string }

/** Runs a tool of the build; never throws on a non-zero exit (the caller asserts). */
export async function tool(name: 'helm' | 'kubeconform', args: readonly string[], env: Record<string, string> = {}, timeoutMs = 300_000): Promise<RunResult> {
  const bin = join(await tools(), name);
  try {
    const r = await run(bin, [...args], { cwd: ROOT, env: helmEnv(env), maxBuffer: 64 << 20, timeout: timeoutMs });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code?: number | string; stdout?: string; stderr?: string; message: string };
    if (typeof err.code !== 'number') throw e;
    return { code: err.code, stdout: err.stdout ?? '', stderr: err.stderr ?? err.message };
  }
}

/** `helm template` of the chart with a profile (or none) and extra flags; fails on a helm error. */
export async function render(profile: string | undefined, extra: readonly string[] = [], namespace = 'kube-system'): Promise<{ text: string; objects: K8sObject[] }> {
  const args = ['template', 'retina', CHART, '-n', namespace, ...(profile ? ['-f', profileFile(profile)] : []), ...extra];
  const r = await tool('helm', args);
  if (r.code !== 0) throw new Error(`helm ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return { text: r.stdout, objects: parseObjects(r.stdout) };
}

export function parseObjects(text: string): K8sObject[] {
  return parseAllDocuments(text).map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null && typeof o === 'object');
}

export const find = (objs: readonly K8sObject[], kind: string, name?: string): K8sObject[] =>
  objs.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));

export function one(objs: readonly K8sObject[], kind: string, name: string): K8sObject {
  const f = find(objs, kind, name);
  if (f.length !== 1) throw new Error(`expected one ${kind} ${name}, found ${f.length} (have: ${objs.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')})`);
  return f[0] as K8sObject;
}

/** kubeconform -strict over a YAML stream, against the offline schemas of hack/chart/build.sh. */
export async function kubeconform(text: string, skip: readonly string[] = []): Promise<RunResult & { summary: { valid: number; invalid: number; errors: number; skipped: number } }> {
  const dir = mkdtempSync(join(tmpdir(), 'retina-kc-'));
  const file = join(dir, 'rendered.yaml');
  writeFileSync(file, text);
  const schemas = join(await tools(), 'schemas');
  const r = await tool('kubeconform', ['-strict', '-summary', '-output', 'json', '-schema-location', `${schemas}/{{ .ResourceKind }}{{ .KindSuffix }}.json`,
    ...(skip.length ? ['-skip', skip.join(',')] : []), file]);
  const parsed = JSON.parse(r.stdout || '{}') as { summary?: { valid: number; invalid: number; errors: number; skipped: number } };
  return { ...r, summary: parsed.summary ?? { valid: 0, invalid: 0, errors: 0, skipped: 0 } };
}
