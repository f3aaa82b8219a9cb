import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // examples/*.ts import the built package: test/client-types.test.ts compiles them under tsc --strict
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
    files: ['**/*.js', '**/*.mjs', 'bin/*'],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setImmediate: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', performance: 'readonly', queueMicrotask: 'readonly', Buffer: 'readonly' },
    },
  },
);
