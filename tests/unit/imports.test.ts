import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The shape of `src/` and of the library's `packages/tessera-tokens/src/` (docs/architecture.md,
 * "Layout"), each on its own: no import circle between files, no two
 * units that import each other (nor a longer circle of units), and Fastify only at the edge. A
 * unit is a first-level folder under `src/` (`apps/`, `tokens/`, `http/`, …); a file directly in
 * `src/` (`errors.ts`, `server.ts`, …) is a unit of its own, since each of those is a small module
 * that others share, or one that puts them together. Every import counts: static, type-only
 * (`import type`, `export type … from`) and dynamic (`import('…')`), since each one ties the two
 * modules together for whoever changes either. The library imports nothing of the server, nor any
 * package but those its package.json names.
 */

// This file compiles to dist/tests/unit/; the sources are read from the repository itself.
const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));
const LIBRARY = fileURLToPath(new URL('../../../packages/tessera-tokens/', import.meta.url));

interface SourceTree {
  label: string;
  dir: string;
  /** The units that serve HTTP, the only ones that may import Fastify and its plugins. */
  edge: ReadonlySet<string>;
}

const TREES: readonly SourceTree[] = [
  { label: 'src/', dir: SRC, edge: new Set(['http', 'portal', 'server.ts']) },
  { label: 'packages/tessera-tokens/src/', dir: join(LIBRARY, 'src'), edge: new Set(['http']) },
];
const FASTIFY = /^(?:fastify|fastify-plugin|@fastify\/.+)$/;

const STATIC_IMPORT =
  /^[ \t]*(?:import|export)[ \t]+(?:type[ \t]+)?(?:[\w$]+[ \t]*,?[ \t]*)?(?:\{[^}]*\}|\*(?:[ \t]+as[ \t]+[\w$]+)?)?[ \t]*from[ \t]*['"]([^'"]+)['"]/gm;
const SIDE_EFFECT_IMPORT = /^[ \t]*import[ \t]*['"]([^'"]+)['"]/gm;
const DYNAMIC_IMPORT = /\bimport\([ \t]*['"]([^'"]+)['"][ \t]*\)/g;

/** The module specifiers a TypeScript file imports or re-exports from. */
function importSpecifiers(source: string): string[] {
  return [STATIC_IMPORT, SIDE_EFFECT_IMPORT, DYNAMIC_IMPORT].flatMap((pattern) => [...source.matchAll(pattern)].map((match) => match[1]!));
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) =>
      entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
    )
    .sort();
}

/** A file's path under `root`, with forward slashes. */
const nameUnder = (root: string, file: string) => relative(root, file).split('\\').join('/');
/** The unit a file belongs to: its first-level folder, or the file itself when it lies directly in `src/`. */
const unitOf = (path: string) => path.split('/')[0]!;

interface Module {
  /** Files under `src/` this one imports. */
  local: string[];
  /** Packages and Node's modules. */
  external: string[];
}

function readGraph(root: string): Map<string, Module> {
  const name = (file: string) => nameUnder(root, file);
  const graph = new Map<string, Module>();
  for (const file of sourceFiles(root)) {
    const module: Module = { local: [], external: [] };
    for (const specifier of importSpecifiers(readFileSync(file, 'utf8'))) {
      if (specifier.startsWith('.')) {
        module.local.push(name(resolve(dirname(file), specifier.replace(/\.js$/, '.ts'))));
      } else {
        module.external.push(specifier);
      }
    }
    graph.set(name(file), module);
  }
  return graph;
}

/**
 * The import circles: one for each group of modules (files, or units) that reach each other, as the
 * modules along it, the first repeated at the end. Fixing it may leave another in the same group.
 */
function findCycles(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  // Tarjan's strongly connected components: each one with more than a module (or a module importing
  // itself) holds at least one circle.
  let counter = 0;
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (node: string) => {
    index.set(node, counter);
    lowLink.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        lowLink.set(node, Math.min(lowLink.get(node)!, lowLink.get(next)!));
      } else if (onStack.has(next)) {
        lowLink.set(node, Math.min(lowLink.get(node)!, index.get(next)!));
      }
    }
    if (lowLink.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (edges.get(node) ?? []).includes(node)) components.push(component.sort());
    }
  };
  for (const node of [...edges.keys()].sort()) if (!index.has(node)) visit(node);
  return components.map((component) => shortestCircle(edges, component[0]!, new Set(component)));
}

/** The shortest way from `start` back to itself, within its component (breadth first). */
function shortestCircle(edges: ReadonlyMap<string, readonly string[]>, start: string, component: ReadonlySet<string>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const next of edges.get(node) ?? []) {
      if (!component.has(next)) continue;
      if (next === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0]!)!);
        return [...path, start];
      }
      if (!cameFrom.has(next)) {
        cameFrom.set(next, node);
        queue.push(next);
      }
    }
  }
  throw new Error(`${start} is in a circle that cannot be walked`);
}

describe('importSpecifiers: what the checks below read of a file', () => {
  it('finds static, type-only, re-exported, side-effect and dynamic imports, over several lines too', () => {
    const source = [
      "import assert from 'node:assert';",
      "import Fastify, { type FastifyInstance } from 'fastify';",
      "import type { A } from './a.js';",
      'import {',
      '  b,',
      '  type C,',
      "} from '../b.js';",
      "import * as d from './d.js';",
      "export { e } from './e.js';",
      "export type { F } from './f.js';",
      "export * from './g.js';",
      "import './h.js';",
      "const i = await import('./i.js');",
      " * import j from './j.js' (in a comment)",
      "const k = 'import k from ./k.js';",
    ].join('\n');
    assert.deepEqual(importSpecifiers(source).sort(), [
      '../b.js',
      './a.js',
      './d.js',
      './e.js',
      './f.js',
      './g.js',
      './h.js',
      './i.js',
      'fastify',
      'node:assert',
    ]);
  });
});

describe('findCycles', () => {
  it('names each circle once, from its first file', () => {
    const edges = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', []],
      ['e', ['e']],
    ]);
    assert.deepEqual(findCycles(edges), [
      ['a', 'b', 'c', 'a'],
      ['e', 'e'],
    ]);
  });
});

for (const { label, dir, edge } of TREES)
  describe(`the imports of ${label}`, () => {
    const graph = readGraph(dir);

    it('reads every source file, and every relative import names one of them', () => {
      assert.ok(graph.size > 50, `only ${graph.size} files read under ${dir}`);
      const missing = [...graph].flatMap(([file, { local }]) =>
        local.filter((target) => !graph.has(target)).map((target) => `${file} → ${target}`),
      );
      assert.deepEqual(missing, []);
    });

    it('has no import circle between files', () => {
      const cycles = findCycles(new Map([...graph].map(([file, { local }]) => [file, local])));
      assert.equal(cycles.length, 0, `import circles:\n${cycles.map((cycle) => `  ${cycle.join(' → ')}`).join('\n')}`);
    });

    /** Between two units, the first import found that ties them, to name in the messages. */
    const unitImports = new Map<string, string>();
    for (const [file, { local }] of graph) {
      for (const target of local) {
        const [from, to] = [unitOf(file), unitOf(target)];
        if (from !== to && !unitImports.has(`${from} ${to}`)) unitImports.set(`${from} ${to}`, `${file} → ${target}`);
      }
    }

    it(`has no two units (first-level folders, or files directly in ${label}) that import each other`, () => {
      const pairs = [...unitImports.keys()]
        .map((key) => key.split(' ') as [string, string])
        .filter(([from, to]) => from < to && unitImports.has(`${to} ${from}`))
        .map(([from, to]) => `  ${from} ↔ ${to}: ${unitImports.get(`${from} ${to}`)}, and ${unitImports.get(`${to} ${from}`)}`);
      assert.equal(pairs.length, 0, `units that import each other:\n${pairs.join('\n')}`);
    });

    it('has no circle through several units either', () => {
      const edges = new Map<string, string[]>();
      for (const key of unitImports.keys()) {
        const [from, to] = key.split(' ') as [string, string];
        edges.set(from, [...(edges.get(from) ?? []), to]);
      }
      const circles = findCycles(edges).map(
        (circle) =>
          `  ${circle.join(' → ')}: ${circle
            .slice(1)
            .map((to, index) => unitImports.get(`${circle[index]} ${to}`))
            .join(', ')}`,
      );
      assert.equal(circles.length, 0, `units in an import circle:\n${circles.join('\n')}`);
    });

    it(`imports Fastify only at the edge (${[...edge].join(', ')})`, () => {
      const outside = [...graph].flatMap(([file, { external }]) =>
        edge.has(unitOf(file))
          ? []
          : external.filter((specifier) => FASTIFY.test(specifier)).map((specifier) => `  ${file} imports ${specifier}`),
      );
      assert.equal(outside.length, 0, `Fastify outside the edge:\n${outside.join('\n')}`);
    });
  });

describe('the library, packages/tessera-tokens/', () => {
  const graph = readGraph(join(LIBRARY, 'src'));
  const manifest = JSON.parse(readFileSync(join(LIBRARY, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    peerDependencies: Record<string, string>;
  };
  const declared = new Set([...Object.keys(manifest.dependencies), ...Object.keys(manifest.peerDependencies)]);

  it('imports nothing outside its own src/: none of the server', () => {
    const outside = [...graph].flatMap(([file, { local }]) =>
      local.filter((target) => target.startsWith('../')).map((target) => `  ${file} → ${target}`),
    );
    assert.deepEqual(outside, []);
  });

  it("imports only Node's modules and the packages its package.json names", () => {
    const undeclared = [...graph].flatMap(([file, { external }]) =>
      external
        .filter((specifier) => !specifier.startsWith('node:') && !declared.has(specifier))
        .map((specifier) => `  ${file} imports ${specifier}`),
    );
    assert.deepEqual(undeclared, []);
  });
});
