import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { advancedFamilies, advancedMetricNames } from '../catalog.js';
import { KINDS } from './kinds.js';

describe('one catalog of advanced metrics', () => {
  it('the flow metrics the module counts are the catalog\'s families', () => {
    for (const name of advancedMetricNames) {
      const kind = KINDS[name];
      const fams = advancedFamilies[name];
      if (kind) assert.deepEqual(fams, [kind.def], name);
      else assert.ok(name.startsWith('node_apiserver_') || fams.length === 0, name);
    }
  });
});
