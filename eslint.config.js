// ESLint for the TypeScript of src/, tests/ and bench/, with type information, and for the few
// JavaScript files beside them. Layout is Prettier's (.prettierrc.json), not ESLint's.
//
// TypeScript 7 (`tsc`, which builds and type-checks) is a native compiler without the JavaScript
// compiler API that typescript-eslint reads types through; typescript-eslint 8 supports TypeScript
// up to 6.0. So package.json installs both, as TypeScript's release notes advise: the package name
// `typescript`, which typescript-eslint loads, is TypeScript 6 (`@typescript/typescript6`, whose
// binary is `tsc6`), and `@typescript/native` is TypeScript 7, whose binary is `tsc`. Both read the
// same tsconfig.json and agree on this code (`npx tsc6 -p tsconfig.json --noEmit` passes too). When
// typescript-eslint supports TypeScript 7, `typescript` goes back to being TypeScript 7 alone.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['**/dist/', 'node_modules/', 'data/', 'bench/results/'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // `== null` (null or undefined) is the one loose comparison that says what it means.
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      // A type-only import says so, so that compiling it away is never a question; a line that
      // imports values and types marks each type (`import { a, type B }`), as the code does.
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      // A name that starts with `_` is unused on purpose (`for (const _ of text)`), and so is a key
      // taken out of an object to keep the rest (`const { secret: _secret, ...rest } = …`).
      '@typescript-eslint/no-unused-vars': ['error', { varsIgnorePattern: '^_', argsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // Fastify's plugins and handlers are async by contract, and so is each store method that the
      // synchronous SQLite driver answers at once: `async` there returns the promise the interface
      // promises (a throw becomes a rejection) with nothing to await.
      '@typescript-eslint/require-await': 'off',
      // node:test's test() and describe() return promises that the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] }] },
      ],
    },
  },
  {
    // The tests read the service's JSON answers as `any` (tests/helpers/http.ts) and check them with
    // assertions, which are the type check there: typing each answer would restate the contract.
    files: ['tests/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // The JavaScript files are outside tsconfig.json: no type information, so no rule that needs it.
    files: ['**/*.js', '**/*.mjs', 'bin/tessera'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: globals.node },
  },
  {
    files: ['assets/**/*.js'],
    ignores: ['assets/nginx/**'],
    languageOptions: { globals: globals.browser },
  },
  {
    // Scripts for nginx's JavaScript module, njs 0.7 (Debian 12's): its globals, and none of the syntax
    // it does not parse, which nginx would refuse only when it loads the script.
    files: ['assets/nginx/**/*.js'],
    languageOptions: {
      globals: {
        Buffer: 'readonly',
        crypto: 'readonly',
        ngx: 'readonly',
        njs: 'readonly',
        TextDecoder: 'readonly',
        TextEncoder: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { varsIgnorePattern: '^_', argsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        { selector: 'ObjectPattern, ArrayPattern', message: 'njs 0.7 has no destructuring.' },
        { selector: 'ForOfStatement', message: 'njs 0.7 has no for…of.' },
        { selector: 'SpreadElement, RestElement', message: 'njs 0.7 has no spread or rest.' },
        { selector: 'ClassDeclaration, ClassExpression', message: 'njs 0.7 has no classes.' },
        { selector: 'ChainExpression', message: 'njs 0.7 has no optional chaining.' },
        { selector: "LogicalExpression[operator='??']", message: 'njs 0.7 has no ??.' },
        { selector: 'AssignmentPattern', message: 'njs 0.7 has no default parameters.' },
        { selector: 'CatchClause[param=null]', message: "njs 0.7 needs the catch clause's parameter (_error when unused)." },
        {
          selector: ':matches(CallExpression, NewExpression) > AwaitExpression.arguments',
          message: 'njs 0.7 takes no await in arguments.',
        },
      ],
    },
  },
);
