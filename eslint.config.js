// Lint rules that keep the architecture honest (see README "Architecture"):
// OS code only under linux/ and windows/ folders, koffi only in src/ffi/<os>, process.platform only
// in src/platform/select.ts, no floating promises, explicit error causes.
import tseslint from 'typescript-eslint';

const other = { linux: 'windows', windows: 'linux' };
const osBlock = (os) => ({
  files: [`src/**/${os}/**/*.ts`],
  rules: { 'no-restricted-imports': ['error', { patterns: [`**/${other[os]}/**`] }] },
});

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
  osBlock('linux'),
  osBlock('windows'),
  {
    files: ['src/**/*.ts'],
    ignores: ['src/**/linux/**', 'src/**/windows/**', 'src/platform/select.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: ['koffi'], patterns: ['**/linux/**', '**/windows/**'] }],
      'no-restricted-properties': ['error', { object: 'process', property: 'platform' }],
    },
  },
  {
    files: ['src/plugins/**/*.ts', 'src/platform/**/*.ts'],
    ignores: ['src/ffi/**'],
    rules: { 'no-restricted-imports': ['error', { paths: [{ name: 'koffi', message: 'koffi is imported only in src/ffi/<os>/' }], patterns: [] }] },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
);
