import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseFlags, UsageError } from './args.js';
import { snapshotBlob } from './command.js';

const kubectl = { strings: { namespace: 'default', output: undefined, name: undefined }, booleans: { 'all-namespaces': false, wait: true, help: false }, short: { n: 'namespace', A: 'all-namespaces', o: 'output', h: 'help' } };
const fails = (argv: string[], text: RegExp, spec = kubectl): void => {
  assert.throws(() => parseFlags(argv, spec), (e: unknown) => e instanceof UsageError && text.test(e.message), argv.join(' '));
};

describe('parseFlags (node:util parseArgs tokens, kubectl rules): every command', () => {
  it('--flag value, --flag=value, short aliases, defaults, last one wins', () => {
    const f = parseFlags(['--name', 'a', '-n', 'kube-system', '--output=/tmp/x', '--name=b'], kubectl);
    assert.equal(f.str('name'), 'b');
    assert.equal(f.str('namespace'), 'kube-system');
    assert.equal(f.str('output'), '/tmp/x');
    assert.equal(f.bool('wait'), true, 'default');
    assert.equal(f.has('namespace'), true);
    assert.equal(f.has('wait'), false);
    assert.deepEqual(parseFlags([], kubectl).values, { namespace: 'default', output: undefined, name: undefined, 'all-namespaces': false, wait: true, help: false });
  });

  it('booleans: --flag, --flag=true|false (cobra), short -A, -h, short groups', () => {
    assert.equal(parseFlags(['--wait=false'], kubectl).bool('wait'), false);
    assert.equal(parseFlags(['--wait=0'], kubectl).bool('wait'), false);
    assert.equal(parseFlags(['--all-namespaces=True'], kubectl).bool('all-namespaces'), true);
    assert.equal(parseFlags(['-A'], kubectl).bool('all-namespaces'), true);
    const g = parseFlags(['-Ah'], kubectl);
    assert.ok(g.bool('all-namespaces') && g.bool('help'));
    fails(['--wait=maybe'], /^--wait: "maybe" is not true or false$/);
  });

  it('a value may start with a dash, as in kubectl', () => {
    assert.equal(parseFlags(['--name', '-x'], kubectl).str('name'), '-x');
    assert.equal(parseFlags(['-o', '--weird'], kubectl).str('output'), '--weird');
  });

  it('errors name the flag', () => {
    fails(['--bogus'], /^unknown flag --bogus$/);
    fails(['--bogus=1'], /^unknown flag --bogus$/);
    fails(['-x'], /^unknown flag -x$/);
    fails(['--name'], /^--name needs a value$/);
    fails(['-n'], /^--namespace needs a value$/);
    fails(['stray'], /^unexpected argument "stray"$/);
  });

  it('positionals when the command takes them (retina-agent diagnose)', () => {
    const f = parseFlags(['--config', 'c.yaml', 'extra', '--', '--not-a-flag'], { strings: { config: undefined }, positionals: true });
    assert.equal(f.str('config'), 'c.yaml');
    assert.deepEqual(f.positionals, ['extra', '--not-a-flag']);
  });

  it('list and int', () => {
    const f = parseFlags(['--name', ' a, b ,,c', '--output', '42'], kubectl);
    assert.deepEqual(f.list('name'), ['a', 'b', 'c']);
    assert.equal(f.int('output'), 42);
    assert.throws(() => parseFlags(['--output', '-1'], kubectl).int('output'), /--output: "-1" is not a non-negative integer/);
  });
});

describe('snapshotBlob: the start-up snapshot node runs from (src/cli/agent-snapshot.ts)', () => {
  it('--snapshot-blob B and --snapshot-blob=B in execArgv; none without', () => {
    assert.equal(snapshotBlob(['--max-semi-space-size=2', '--snapshot-blob', '/app/retina-agent.blob']), '/app/retina-agent.blob');
    assert.equal(snapshotBlob(['--snapshot-blob=/x/y.blob', '--no-allocation-site-pretenuring']), '/x/y.blob');
    assert.equal(snapshotBlob(['--max-semi-space-size=2']), undefined);
    assert.equal(snapshotBlob(['--snapshot-blob']), undefined);
  });
});
