/**
 * The HostProcess Job that runs the Windows tests and the fixture recorder on a real node
 * (test/windows/hostprocess-job.yaml) is a valid Job for kubeconform -strict (the chart's offline
 * schemas), runs as a HostProcess pod as SYSTEM on Windows nodes only, and calls build.ps1 targets
 * that exist.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { kubeconform, ROOT } from '../chart/helm.js';

const FILE = join(ROOT, 'test/windows/hostprocess-job.yaml');

describe('the Windows node test Job', () => {
  it('is valid for kubeconform -strict', { timeout: 600_000 }, async () => {
    const r = await kubeconform(readFileSync(FILE, 'utf8'));
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.deepEqual(r.summary, { valid: 1, invalid: 0, errors: 0, skipped: 0 });
  });

  it('runs build.ps1 test and record in a HostProcess pod as SYSTEM on Windows nodes', () => {
    type Job = { spec: { template: { spec: { hostNetwork: boolean; nodeSelector: Record<string, string>; securityContext: { windowsOptions: { hostProcess: boolean; runAsUserName: string } }; containers: { command: string[] }[] } } } };
    const job = parse(readFileSync(FILE, 'utf8')) as Job;
    const pod = job.spec.template.spec;
    assert.equal(pod.hostNetwork, true);
    assert.equal(pod.nodeSelector['kubernetes.io/os'], 'windows');
    assert.deepEqual(pod.securityContext.windowsOptions, { hostProcess: true, runAsUserName: 'NT AUTHORITY\\SYSTEM' });
    const script = (pod.containers[0]?.command ?? []).join('\n');
    const targets = [...script.matchAll(/\.\\build\.ps1 (\w+)/g)].map((m) => m[1]);
    assert.deepEqual(targets, ['test', 'record']);
    const allowed = /ValidateSet\(([^)]*)\)/.exec(readFileSync(join(ROOT, 'build.ps1'), 'utf8'))?.[1] ?? '';
    for (const t of targets) assert.match(allowed, new RegExp(`'${t}'`), `build.ps1 has a ${t} target`);
  });
});
