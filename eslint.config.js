// Lint rules that keep the architecture honest (see README "Architecture"):
// OS code only under linux/ and windows/ folders, koffi only in src/ffi/<os> (and its loader
// src/ffi/koffi.ts), process.platform only in src/platform/select.ts (and that loader), no floating
// promises, explicit error causes. Which layer may import which is .dependency-cruiser.cjs's job
// (STYLE.md's layer table); these blocks add what it cannot say. Each file gets exactly one of the
// blocks below (a later block replaces a rule's options, it does not merge them), so every file
// keeps all three restrictions.
import tseslint from 'typescript-eslint';

const other = { linux: 'windows', windows: 'linux' };
const koffiOnlyInFfi = { name: 'koffi', message: 'koffi is imported only in src/ffi/<os>/' };
const restrict = ({ koffi = false, patterns }) => ({
  'no-restricted-imports': ['error', { paths: koffi ? [] : [koffiOnlyInFfi], patterns }],
  'no-restricted-properties': ['error', { object: 'process', property: 'platform', message: 'only src/platform/select.ts reads process.platform' }],
});
const osBlock = (os) => ({ files: [`src/**/${os}/**/*.ts`], rules: restrict({ patterns: [`**/${other[os]}/**`] }) });
const ffiBlock = (os) => ({ files: [`src/ffi/${os}/**/*.ts`], rules: restrict({ koffi: true, patterns: [`**/${other[os]}/**`] }) });

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.cache/**', 'native-*/**', 'charts/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': ['error', {
        allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }],
      }],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/**/linux/**', 'src/**/windows/**', 'src/platform/select.ts', 'src/ffi/koffi.ts'],
    rules: restrict({ patterns: ['**/linux/**', '**/windows/**'] }),
  },
  osBlock('linux'),
  osBlock('windows'),
  ffiBlock('linux'),
  ffiBlock('windows'),
  {
    // The one place that reads process.platform and loads OS code (with a dynamic import()).
    files: ['src/platform/select.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [koffiOnlyInFfi] }] },
  },
  {
    // koffi's loader for both OS folders: it names koffi (types) and reads process.platform for
    // koffi's triplet, the host's whichever folder's bindings load it (src/ffi/koffi.ts says why).
    files: ['src/ffi/koffi.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: ['**/linux/**', '**/windows/**'] }] },
  },
  {
    // node:http's ES namespace loads Node's bundled undici (its WebSocket getters): about 10 MB of
    // RSS the agent never uses. Source takes it from process.getBuiltinModule('node:http').
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { paths: ['node:http', 'http'].map((name) => ({
        name, allowTypeImports: true, message: "use process.getBuiltinModule('node:http'): its ES namespace loads undici",
      })) }],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
);
