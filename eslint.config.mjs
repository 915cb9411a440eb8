// ESLint (flat config): typescript-eslint's recommended rules, plus the few rules the code
// already follows and should keep following. `make lint` runs it with tsc and the layer check.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['build/', 'dist/', 'fixtures/', 'node_modules/'] },
  // a disable comment must silence a rule that fires, or it is an error
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      // TypeScript checks names itself (typescript-eslint's advice for .ts files)
      'no-undef': 'off',
      // an unused binding is named `_…` on purpose (a rest split, an Express error handler's 4th argument)
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-throw-literal': 'error',
      'object-shorthand': 'error',
      'prefer-arrow-callback': 'error',
      'no-else-return': 'error',
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: globals.node },
    // plain CommonJS scripts: require() is their module system
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // the built-in explorer's script runs in the browser, as a classic script
    files: ['src/explorer/assets/**/*.js'],
    languageOptions: { sourceType: 'script', globals: globals.browser },
  },
);
