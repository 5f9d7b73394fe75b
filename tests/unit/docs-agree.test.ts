import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { PACKAGE_ROOT } from '../../src/package-root.js';

// The README's API table and docs/openapi.json describe the same operations: none is in one and
// not the other (docs/openapi.json against the server's routes: tests/http/openapi.test.ts); and
// every link of the documents to a file or a heading of the repository leads somewhere.

const OPERATION_METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** What the table leaves to the document, each for a reason the table's reader does not need. */
const NOT_IN_THE_TABLE: Record<string, string> = {
  'GET /api/apps/{appId}/.well-known/openid-configuration': 'a 404 that says where the OAuth metadata is',
  'GET /api/apps/{appId}/{path}': 'every other path under an app: authenticated, then 404',
  'GET /api/forward-auth/{path}': "Envoy's form of /api/forward-auth, which the table's row covers",
  'GET /openapi.json': 'the document itself, named above the table',
};

interface OpenApi {
  paths: Record<string, Record<string, { responses?: Record<string, unknown> }>>;
}

/** "METHOD /path" of each operation the document gives a success for (not its 405s and preflights). */
function documentedOperations(): Set<string> {
  const document = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'docs', 'openapi.json'), 'utf8')) as OpenApi;
  const operations = new Set<string>();
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of OPERATION_METHODS) {
      const responses = Object.keys(item[method]?.responses ?? {});
      if (responses.some((status) => /^2\d\d$/.test(status))) operations.add(`${method.toUpperCase()} ${path}`);
    }
  }
  return operations;
}

/** "METHOD /path" of each row of the README's API table; a path without a method stands for any. */
function tableOperations(): { operations: Set<string>; anyMethod: Set<string> } {
  const readme = readFileSync(join(PACKAGE_ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## The API'), readme.indexOf('\n## ', readme.indexOf('## The API') + 1));
  const operations = new Set<string>();
  const anyMethod = new Set<string>();
  for (const row of section.split('\n').filter((line) => line.startsWith('| `'))) {
    const cell = row.slice(2, row.indexOf(' | '));
    const methods = [...cell.matchAll(/`([A-Z]+)[`\s]/g)].map((match) => match[1]!);
    for (const [, path] of cell.matchAll(/(\/[^`\s?\\]*)/g)) {
      if (methods.length === 0) anyMethod.add(path!);
      for (const method of methods) operations.add(`${method} ${path}`);
    }
  }
  return { operations, anyMethod };
}

describe('the README and docs/openapi.json', () => {
  it('name the same operations in the API table and the document', () => {
    const documented = documentedOperations();
    const { operations, anyMethod } = tableOperations();
    assert.ok(operations.size >= 15, `only ${operations.size} operations read from the table: ${[...operations].join(', ')}`);
    for (const operation of operations)
      assert.ok(documented.has(operation), `${operation} is in the README's table, not in docs/openapi.json`);
    for (const operation of documented) {
      const path = operation.slice(operation.indexOf(' ') + 1);
      if (operations.has(operation) || anyMethod.has(path) || operation in NOT_IN_THE_TABLE) continue;
      assert.fail(`${operation} is in docs/openapi.json, not in the README's API table`);
    }
  });
});

/** GitHub's anchor of a heading: lower case, spaces to hyphens, punctuation (backticks, slashes, quotes) dropped. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

describe('the links of the README and docs/', () => {
  it('lead to files that exist, and to headings that exist', () => {
    const documents = [
      'README.md',
      ...readdirSync(join(PACKAGE_ROOT, 'docs'))
        .filter((name) => name.endsWith('.md'))
        .map((name) => `docs/${name}`),
    ];
    const broken: string[] = [];
    for (const document of documents) {
      const text = readFileSync(join(PACKAGE_ROOT, document), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [file, anchor] = target!.split('#') as [string, string | undefined];
        const path = file === '' ? document : join(dirname(document), file);
        if (!existsSync(join(PACKAGE_ROOT, path))) {
          broken.push(`${document}: ${target} (no such file)`);
          continue;
        }
        if (anchor === undefined || !path.endsWith('.md')) continue;
        const headings = [...readFileSync(join(PACKAGE_ROOT, path), 'utf8').matchAll(/^#{1,6} (.+)$/gm)].map((match) =>
          anchorOf(match[1]!),
        );
        if (!headings.includes(anchor)) broken.push(`${document}: ${target} (no such heading)`);
      }
    }
    assert.deepEqual(broken, []);
  });
});
