/**
 * `retina-agent diagnose`: one JSON document (or a readable text table) of what the agent sees on
 * this node, for a support ticket. Sections every OS shares (host facts, the config in force with
 * secrets redacted, a running agent's plugin states and lost events, the Kubernetes connection) are
 * assembled here; what only an OS can say comes from `src/platform/<os>/diagnose.ts` through
 * select.ts. Each section runs within its budget and carries its error instead of failing the
 * report. It works with no agent running and never changes the node (no load, attach or map write).
 */
import { writeFileSync } from 'node:fs';
import { ConfigErrors, parseDurationMs, type KeySpec } from '../config/index.js';
import { currentOs, detect, loadDiagnose, loadPlugins, runSections, type DiagnoseSection, type Platform } from '../platform/index.js';
import { loadAgentConfig, type LoadedAgentConfig } from './agent-config.js';
import { readCommandLine, version } from './command.js';
import { hostFacts } from './diagnose-host.js';
import { kubernetesConnection, runningAgent } from './diagnose-remote.js';
import { renderText } from './diagnose-text.js';
import { REDACTED, isSecretKey, redact } from './redact.js';

const USAGE = `usage: retina-agent diagnose [--config FILE] [--kubeconfig FILE] [--format json|text] [--output FILE] [--timeout DURATION]

Prints what the agent sees on this node (host, config in force with secrets redacted, a running
agent's plugin states, the Kubernetes connection, and the OS's interfaces, hooks and BPF state) as
one JSON document, or a readable table with --format text. Reads only; works without an agent.
--timeout bounds each section (default 3s). Exit status 0 even when sections fail; 2 for bad flags.`;

export const DIAGNOSE_SCHEMA = 'retina-ts/diagnose/v1';
const DEFAULT_SECTION_MS = 3_000;

/** The config in force, each key with where its value came from; secret-ish keys redacted. */
export function configDocument(loaded: LoadedAgentConfig, file: string | undefined): unknown {
  const shown = (key: string, v: unknown): unknown => (isSecretKey(key) && v !== undefined && v !== '' ? REDACTED : redact(v));
  const values: Record<string, unknown> = {};
  for (const s of [...loaded.specs].sort((a, b) => a.key.localeCompare(b.key))) values[s.key] = { value: shown(s.key, loaded.values.get(s as KeySpec<unknown>)), source: loaded.values.sourceOf(s.key) };
  return { file: file ?? null, values, unknownKeys: loaded.values.unknownKeys.map((u) => ({ key: u.key, source: u.source, value: shown(u.key, u.value), didYouMean: u.didYouMean })) };
}

export interface DiagnoseOptions {
  readonly configPath: string | undefined;
  readonly kubeconfig: string | undefined;
  readonly env: NodeJS.ProcessEnv;
  readonly timeoutMs: number;
}

/** Builds the report (never throws: a section that cannot be had carries its error). */
export async function diagnose(o: DiagnoseOptions): Promise<Record<string, unknown>> {
  const os = currentOs();
  const info = await detect(os);
  const platform: Platform = { info, plugins: await loadPlugins(os) };
  let loaded: LoadedAgentConfig | undefined;
  let configError: unknown;
  try {
    loaded = await loadAgentConfig(platform, o.configPath, o.env);
  } catch (e) {
    configError = e;
  }
  const agent = loaded?.agent;
  const shared: DiagnoseSection[] = [
    { name: 'host', collect: () => hostFacts(o.timeoutMs) },
    {
      name: 'config',
      collect: () => {
        if (configError instanceof ConfigErrors) throw new Error(`configuration errors: ${configError.errors.map((x) => x.message).join('; ')}`);
        if (!loaded) throw configError instanceof Error ? configError : new Error(String(configError));
        return configDocument(loaded, o.configPath);
      },
    },
    {
      name: 'agent',
      collect: () => runningAgent(agent?.apiServerHost ?? '0.0.0.0', agent?.apiServerPort ?? 10093, o.timeoutMs, {
        tls: agent?.metricsSecurity.tls !== undefined, auth: agent?.metricsSecurity.auth.enabled ?? false,
      }),
    },
    { name: 'kubernetes', collect: () => kubernetesConnection(o.kubeconfig, o.env, o.timeoutMs) },
  ];
  let osSections: readonly DiagnoseSection[];
  try {
    osSections = (await loadDiagnose(os)).osSections(info);
  } catch (e) {
    osSections = [{ name: os, collect: () => { throw new Error(`the ${os} part of diagnose cannot be loaded: ${(e as Error).message}`, { cause: e }); } }];
  }
  return {
    schema: DIAGNOSE_SCHEMA, generatedAt: new Date().toISOString(), version: version(), os, enabledPlugin: agent?.enabledPlugin ?? null,
    sections: await runSections([...shared, ...osSections], o.timeoutMs),
  };
}

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const flags = readCommandLine('retina-agent diagnose', USAGE, argv, ['config', 'kubeconfig', 'format', 'output', 'timeout']);
  if (typeof flags === 'number') return flags;
  const bad = (msg: string): number => {
    process.stderr.write(`retina-agent diagnose: ${msg}\n${USAGE}\n`);
    return 2;
  };
  const format = (flags.values['format'] as string | undefined) ?? 'json';
  if (format !== 'json' && format !== 'text') return bad(`--format must be json or text, not ${JSON.stringify(format)}`);
  if (flags.positionals.length) return bad(`unexpected argument ${JSON.stringify(flags.positionals[0])}`);
  let timeoutMs = DEFAULT_SECTION_MS;
  if (flags.values['timeout'] !== undefined) {
    const t = parseDurationMs(String(flags.values['timeout']));
    if (t === undefined || t < 100 || t > 60_000) return bad(`--timeout must be a duration from 100ms to 60s, not ${JSON.stringify(flags.values['timeout'])}`);
    timeoutMs = t;
  }
  const report = await diagnose({
    configPath: flags.values['config'] as string | undefined,
    kubeconfig: (flags.values['kubeconfig'] as string | undefined) || env['KUBECONFIG'] || undefined,
    env, timeoutMs,
  });
  const text = format === 'json' ? JSON.stringify(report, null, 2) + '\n' : renderText(report);
  const out = flags.values['output'] as string | undefined;
  if (out) writeFileSync(out, text);
  else process.stdout.write(text);
  return 0;
}
