import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { PACKAGE_ROOT } from '../../src/package-root.js';

// The README's API table and docs/openapi.json describe the same operations: none is in one and
// not the other (docs/openapi.json against the server's routes: tests/http/openapi.test.ts); every
// link of the documents to a file or a heading of the repository leads somewhere; tests/README.md
// maps every test file and says which run one at a time as tests/run.ts does; and the decisions and
// the architecture notes cite the repository's own files only, each decision dated with its status.

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
      'tests/README.md',
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

/** The part of `text` from the heading `heading` to the next heading of its level or above. */
function sectionOf(text: string, heading: string): string {
  const start = text.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `no heading "${heading}"`);
  const level = heading.indexOf(' ');
  const next = text.slice(start + heading.length + 2).search(new RegExp(`^#{1,${level}} `, 'm'));
  return next < 0 ? text.slice(start) : text.slice(start, start + heading.length + 2 + next);
}

/** Every file below `dir` whose name ends with `suffix`, as a path relative to `dir` with `/`. */
function filesBelow(dir: string, suffix: string, under = ''): string[] {
  return readdirSync(join(dir, under), { withFileTypes: true })
    .flatMap((entry) => {
      const path = under === '' ? entry.name : `${under}/${entry.name}`;
      return entry.isDirectory() ? filesBelow(dir, suffix, path) : entry.name.endsWith(suffix) ? [path] : [];
    })
    .sort();
}

describe('tests/README.md', () => {
  const TESTS = join(PACKAGE_ROOT, 'tests');
  const map = readFileSync(join(TESTS, 'README.md'), 'utf8');
  const testFiles = filesBelow(TESTS, '.test.ts');

  it('names every test file under a feature', () => {
    const features = sectionOf(map, '## Features and their tests');
    assert.ok(testFiles.length >= 100, `only ${testFiles.length} test files found below ${TESTS}`);
    const unnamed = testFiles.filter((file) => !features.includes(`\`${file}\``));
    assert.deepEqual(unnamed, [], 'test files that the feature map of tests/README.md does not name');
    const named = [...map.matchAll(/`([\w-]+\/[\w.-]+\.test\.ts)`/g)].map((match) => match[1]!);
    assert.deepEqual(
      named.filter((file) => !testFiles.includes(file)),
      [],
      'test files that tests/README.md names and that do not exist',
    );
  });

  it('describes every folder that holds test files', () => {
    const folders = sectionOf(map, '## The folders');
    const withTests = [...new Set(testFiles.map((file) => file.slice(0, file.indexOf('/') + 1)))];
    assert.deepEqual(
      withTests.filter((folder) => !folders.includes(`| \`${folder}\` |`)),
      [],
      'folders without a row in the table of tests/README.md',
    );
  });

  it('lists the files run one at a time as tests/run.ts does', () => {
    const runner = readFileSync(join(TESTS, 'run.ts'), 'utf8');
    const declaration = /const SERIAL = \[([^\]]*)\];/.exec(runner);
    assert.ok(declaration !== null, 'tests/run.ts has no SERIAL list');
    const serial = [...declaration[1]!.matchAll(/^\s*'([^']+)',/gm)].map((match) => match[1]!.replace(/\.test\.js$/, '.test.ts'));
    const listed = [...sectionOf(map, "## The runner's passes").matchAll(/^- `([^`]+)`$/gm)].map((match) => match[1]!);
    assert.ok(serial.length >= 5, `only ${serial.length} entries read from SERIAL`);
    assert.deepEqual(listed, serial);
  });

  it("is where the README's tests section leads", () => {
    assert.match(sectionOf(readFileSync(join(PACKAGE_ROOT, 'README.md'), 'utf8'), '## Tests'), /\]\(tests\/README\.md\)/);
  });
});

describe('docs/decisions.md and docs/architecture.md', () => {
  const documents = ['docs/decisions.md', 'docs/architecture.md'];

  it("cite the repository's own files, each of which exists", () => {
    const problems: string[] = [];
    for (const document of documents) {
      const text = readFileSync(join(PACKAGE_ROOT, document), 'utf8');
      // A link or a path that leaves the repository: a link resolved from the document's folder,
      // and a path in code, which the documents write from the repository's root.
      for (const [, target] of text.matchAll(/\]\(([^)\s#]+)[^)]*\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        if (relative(PACKAGE_ROOT, join(PACKAGE_ROOT, dirname(document), target!)).startsWith('..'))
          problems.push(`${document}: ${target} (outside the repository)`);
      }
      for (const [span] of text.matchAll(/`\.\.\/[^`]*`/g)) problems.push(`${document}: ${span} (outside the repository)`);
      // A file of the repository named by its path from the root: it must be there.
      for (const [path] of text.matchAll(/(?<![\w./-])(?:src|docs|tests|scripts|assets|bench|packages)\/[\w./-]*[\w/]/g)) {
        if (!existsSync(join(PACKAGE_ROOT, path))) problems.push(`${document}: ${path} (no such file)`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('date every decision with its status', () => {
    const text = readFileSync(join(PACKAGE_ROOT, 'docs', 'decisions.md'), 'utf8');
    const decisions = text.split('\n').filter((line) => line.startsWith('- '));
    assert.ok(decisions.length >= 100, `only ${decisions.length} decisions read`);
    const undated = decisions.filter((line) => !/^- \*(Accepted|Proposed|Superseded|Deprecated), \d{4}-\d{2}-\d{2}[.( ]/.test(line));
    assert.deepEqual(undated, [], 'decisions without "*Status, YYYY-MM-DD" at their start');
  });
});
