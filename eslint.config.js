import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

/** imports go one way (docs/architecture.md#imports): each folder's imports that are refused */
const layer = (files, patterns) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns: patterns.map(([group, message]) => ({ group, message })) }] },
});

export default tseslint.config(
  // examples/*.ts import the built package: test/client/types.test.ts compiles them under tsc --strict
  { ignores: ['dist/**', 'node_modules/**', 'bench/node_modules/**', 'coverage/**', 'examples/**/*.ts', 'test/fixtures/**'] }, // fixtures: Kitten-MQ README programs, kept as their authors wrote them
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // no import circle in src/, type-only imports included
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver({ project: 'tsconfig.json' })] },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  layer(['src/protocol/**/*.ts'], [[['../*'], 'protocol/ is pure: it imports nothing of ours but itself']]),
  layer(['src/link/**/*.ts'], [[['**/broker/**', '**/client/**', '**/ops/**', '**/cli/**', '**/server/**'], 'link/ builds on protocol/ only']]),
  layer(['src/client/**/*.ts'], [[['**/broker/**', '**/ops/**', '**/cli/**', '**/server/**'], 'the client library never imports the broker']]),
  layer(['src/broker/**/*.ts'], [[['**/client/**', '**/cli/**', '**/ops/**', '**/server/**'], 'the broker imports nothing above it: ops/ and server/ hang on its hooks (src/broker/api.ts)']]),
  layer(['src/ops/**/*.ts'], [[['**/broker/*/**', '!**/broker/api.js', '**/broker/broker.js', '**/server/**', '**/client/**', '**/cli/**'], 'ops/ reads the broker through src/broker/api.ts only']]),
  layer(['src/server/**/*.ts'], [[['**/client/**', '**/cli/**'], 'server/ puts a broker and ops/ together; it serves no client']]),
  layer(['src/config/**/*.ts'], [[['**/broker/**', '**/client/**', '**/ops/**', '**/cli/**', '**/runtime/**', '**/server/**'], 'config/ builds on protocol/ only']]),
  layer(['src/runtime/**/*.ts'], [[['**/broker/**', '**/client/**', '**/ops/**', '**/cli/**', '**/link/**', '**/server/**'], 'runtime/ (logger, notify, secret) builds on config/ types only']]),
  {
    files: ['**/*.js', '**/*.mjs', 'bin/*'],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setImmediate: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', performance: 'readonly', queueMicrotask: 'readonly', Buffer: 'readonly' },
    },
  },
);
