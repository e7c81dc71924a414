/** The README is the user's contract: every agent key and every emitted metric family is in it. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { agentKeys } from '../../src/config/index.js';
import { loadPlugins } from '../../src/platform/index.js';

const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('documents every agent configuration key with its default', () => {
    const keys = agentKeys({ os: 'linux', names: [], defaults: [] });
    for (const k of Object.values(keys)) {
      assert.ok(readme.includes(`| \`${k.key}\` |`), `README.md has no row for key ${k.key}`);
    }
  });

  it('documents every metric family a plugin emits', async () => {
    const plugins = [...(await loadPlugins('linux')), ...(await loadPlugins('windows'))];
    for (const p of plugins) {
      for (const m of p.emits) {
        const short = m.name.replace(/^networkobservability_/, '');
        assert.ok(readme.includes(`\`${short}\``) || readme.includes(`\`${m.name}\``), `README.md does not list ${m.name} (emitted by ${p.name})`);
      }
    }
  });

  it('gives the two set-up commands', () => {
    assert.match(readme, /make run/);
    assert.match(readme, /make test/);
  });
});
