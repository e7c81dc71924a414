import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { agentKeys, collectSpecs, type ConfigSpec } from '../config/index.js';
import { loadPlugins } from '../platform/index.js';
import { REDACTED, isSecretKey, redact } from './redact.js';

describe('redact', () => {
  it('redacts credential-like keys in every spelling', () => {
    for (const k of ['token', 'bearerToken', 'RETINA_STORAGE_TOKEN', 'password', 'db_passwd', 'clientSecret', 'azureClientSecret', 'client-key-data',
      'client-certificate-data', 'apiKey', 'api_key', 'accessKey', 'privateKey', 'key', 'storage.key', 'sasToken', 'connectionString', 'Authorization']) {
      assert.ok(isSecretKey(k), k);
    }
  });

  /** Keys that carry credentials by design: diagnose shows them redacted. */
  const secretKeys = new Set(['flowLogs.otlp.headers']);

  it('shows every key the agent declares (none of them is a secret, but the declared credential keys)', async () => {
    for (const os of ['linux', 'windows'] as const) {
      const plugins = await loadPlugins(os);
      const keys = agentKeys({ os, names: plugins.map((p) => p.name), defaults: [] });
      for (const s of collectSpecs(keys, ...plugins.map((p) => p.config as ConfigSpec<object>))) assert.equal(isSecretKey(s.key), secretKeys.has(s.key), `${os}: ${s.key}`);
    }
  });

  it('redacts at any depth, keeps the key names, and leaves empty values alone', () => {
    const input = { a: 1, auth: { token: 'abc', user: 'me' }, list: [{ password: 'p' }, { name: 'x' }], secret: '' };
    assert.deepEqual(redact(input), { a: 1, auth: { token: REDACTED, user: 'me' }, list: [{ password: REDACTED }, { name: 'x' }], secret: '' });
    assert.deepEqual(redact({ nested: { users: [{ user: { 'client-key-data': 'k', username: 'u' } }] } }), { nested: { users: [{ user: { 'client-key-data': REDACTED, username: 'u' } }] } });
  });
});
