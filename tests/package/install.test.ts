import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { errorProblems } from '../helpers/assert.js';
import {
  adminTokenRequest,
  anonymousTokenRequest,
  call,
  childrenOfFile,
  createAppWithCli,
  startTessera,
  terminate,
  type CreatedApp,
} from '../helpers/fleet.js';
import { basic, bearer } from '../helpers/http.js';
import { childEnvironment, REPO_ROOT, type ServerProcess } from '../helpers/process.js';
import { createPostgresDatabase } from '../helpers/store.js';

// What docs/middleware.md tells another service to do, done for real: the library, tessera-tokens
// (packages/tessera-tokens/), packed as npm packs it, installed in an empty project with only the
// service's framework and the driver of its store, and the page's own server.mjs run there as a
// process of its own, against Tessera's server and CLI, tessera-server (the repository's root),
// installed from its own tarball with the library's, as the README says. A package that npm cannot
// install fails the test: nothing is skipped.

const children = childrenOfFile();

const LOCK = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };

/** `name@version` of the version the repository's lockfile holds, so that npm finds it in its cache. */
function locked(name: string): string {
  const version = LOCK.packages[`node_modules/${name}`]?.version;
  assert.ok(version !== undefined, `package-lock.json has no ${name}`);
  return `${name}@${version}`;
}

/** Packages a service mounting the middleware must not have: Tessera's server's own. */
const SERVER_ONLY = [
  'tessera-server',
  'ioredis',
  'rate-limiter-flexible',
  'pino-pretty',
  'prom-client',
  '@fastify/cors',
  '@fastify/cookie',
  '@fastify/csrf-protection',
  '@fastify/helmet',
  '@fastify/static',
  '@node-rs/argon2',
  'typebox',
];

interface Consumer {
  framework: 'Fastify' | 'Express';
  store: 'SQLite' | 'PostgreSQL';
  /** What docs/middleware.md says to install beside the tarball. */
  packages: string[];
  /** What must then be neither installed nor needed. */
  absent: string[];
}

const CONSUMERS: Consumer[] = [
  { framework: 'Fastify', store: 'SQLite', packages: ['fastify', 'libsql'], absent: [...SERVER_ONLY, 'pg', 'express'] },
  { framework: 'Express', store: 'PostgreSQL', packages: ['express', 'pg'], absent: [...SERVER_ONLY, 'libsql', 'fastify', 'pino'] },
];

const SERVER_MANIFEST = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };

/**
 * The server's dependencies at the versions the lockfile holds, beside its tarball and the library's,
 * so that npm installs what the repository was tested with (it would find them itself otherwise).
 */
const SERVER_PACKAGES = Object.keys(SERVER_MANIFEST.dependencies).filter((name) => name !== 'tessera-tokens');

const INSTALL_TIMEOUT_MS = 120_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs npm to completion; fails with npm's own words if it does not succeed. */
async function npm(cwd: string, args: string[]): Promise<Run> {
  const child = spawn('npm', args, { cwd, env: childEnvironment(), stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), INSTALL_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', (error) => reject(new Error(`cannot run npm: ${error.message}`)));
    child.on('close', (exitCode) => resolve(exitCode));
  }).finally(() => clearTimeout(timer));
  if (code !== 0) {
    assert.fail(
      `npm ${args.join(' ')} (in ${cwd}) failed with exit ${code ?? 'killed after ' + INSTALL_TIMEOUT_MS + ' ms'}. ` +
        `It installs from npm's cache (--prefer-offline), which npm ci fills; otherwise the npm registry must be reachable.\n${stderr.slice(-3000)}`,
    );
  }
  return { code, stdout, stderr };
}

/**
 * A package as `npm pack` makes it, from the dist/ that `npm test` has just built (no prepare
 * script): the server (the repository's root), or with `workspace` the library.
 */
async function pack(destination: string, workspace?: string): Promise<string> {
  const { stdout } = await npm(REPO_ROOT, [
    'pack',
    '--ignore-scripts',
    '--json',
    '--pack-destination',
    destination,
    ...(workspace === undefined ? [] : ['--workspace', workspace]),
  ]);
  const [packed] = JSON.parse(stdout) as { filename: string }[];
  assert.ok(packed !== undefined, `npm pack printed no file: ${stdout}`);
  return join(destination, packed.filename);
}

/** An empty project in `dir` with the tarballs and `packages` installed, as docs/middleware.md and the README say. */
async function installProject(dir: string, tarballs: string[], packages: string[]): Promise<void> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'a-service', version: '1.0.0', private: true }));
  await npm(dir, ['install', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs, ...packages.map(locked)]);
}

/** Every package installed in the project, at any depth, by name (from npm's own record of node_modules). */
function installedPackages(dir: string): Set<string> {
  const record = JSON.parse(readFileSync(join(dir, 'node_modules', '.package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
  return new Set(Object.keys(record.packages).map((path) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)));
}

/** The ```js block under the page's `## Fastify` or `## Express` heading: the service's server.mjs. */
function documentedServer(framework: Consumer['framework']): string {
  const page = readFileSync(join(REPO_ROOT, 'docs', 'middleware.md'), 'utf8');
  const block = new RegExp(`\\n## ${framework}\\n[\\s\\S]*?\`\`\`js\\n([\\s\\S]*?)\`\`\``).exec(page)?.[1];
  assert.ok(block !== undefined, `docs/middleware.md has no \`\`\`js block under "## ${framework}"`);
  return block;
}

/** `node server.mjs` in the project, on a port the kernel picks; resolves once it prints the URL it listens on. */
async function startService(dir: string, databaseUrl: string): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['server.mjs'], {
    cwd: dir,
    env: childEnvironment({ DATABASE_URL: databaseUrl, PORT: '0' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  const deadline = Date.now() + 15_000;
  for (;;) {
    const url = /http:\/\/127\.0\.0\.1:[0-9]+/.exec(output)?.[0];
    if (url !== undefined) return { child, baseUrl: url, stdout: () => output, stderr: () => output, exited };
    if (child.exitCode !== null || child.signalCode !== null)
      assert.fail(`server.mjs exited early (${child.exitCode ?? child.signalCode}): ${output}`);
    if (Date.now() > deadline) assert.fail(`server.mjs did not start in time: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A store for Tessera and the service: a SQLite file in `dir`, or a new PostgreSQL database. */
async function createStore(kind: Consumer['store'], dir: string): Promise<{ databaseUrl: string; dispose(): Promise<void> }> {
  if (kind === 'SQLite') return { databaseUrl: `sqlite:${join(dir, 'tessera.db')}`, dispose: async () => {} };
  const { databaseUrl, drop } = await createPostgresDatabase();
  return { databaseUrl, dispose: drop };
}

/** The ```js block under docs/client.md's `## Server code (Node)` heading: server code using tessera-tokens/client. */
function documentedClient(): string {
  const page = readFileSync(join(REPO_ROOT, 'docs', 'client.md'), 'utf8');
  const block = /\n## Server code \(Node\)\n[\s\S]*?```js\n([\s\S]*?)```/.exec(page)?.[1];
  assert.ok(block !== undefined, 'docs/client.md has no ```js block under "## Server code (Node)"');
  return block;
}

let workDir: string;
let serverDir: string;
let clientDir: string;
const consumerDir = (consumer: Consumer) => join(workDir, `${consumer.framework.toLowerCase()}-on-${consumer.store.toLowerCase()}`);

before(
  async () => {
    workDir = mkdtempSync(join(tmpdir(), 'tessera-package-test-'));
    const library = await pack(workDir, 'tessera-tokens');
    const server = await pack(workDir);
    serverDir = join(workDir, 'tessera-server');
    clientDir = join(workDir, 'client-only');
    await Promise.all([
      installProject(serverDir, [library, server], SERVER_PACKAGES),
      installProject(clientDir, [library], []).then(() => writeFileSync(join(clientDir, 'client.mjs'), documentedClient())),
      ...CONSUMERS.map(async (consumer) => {
        await installProject(consumerDir(consumer), [library], consumer.packages);
        writeFileSync(join(consumerDir(consumer), 'server.mjs'), documentedServer(consumer.framework));
      }),
    ]);
  },
  { timeout: 2 * INSTALL_TIMEOUT_MS },
);
after(() => {
  if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true });
});

for (const consumer of CONSUMERS) {
  describe(`the ${consumer.framework} middleware in a service on ${consumer.store}, installed from the packed package`, () => {
    let dir: string;
    let store: { databaseUrl: string; dispose(): Promise<void> };
    let tessera: ServerProcess;
    let service: ServerProcess;
    let app: CreatedApp;
    const url = (rest: string) => `${service.baseUrl}/api/apps/${app.appId}${rest}`;

    before(async () => {
      dir = consumerDir(consumer);
      store = await createStore(consumer.store, workDir);
      const entry = join(serverDir, 'node_modules', 'tessera-server', 'bin', 'tessera');
      tessera = await startTessera(children, { entry, cwd: serverDir, databaseUrl: store.databaseUrl });
      app = await createAppWithCli(children, { entry, cwd: serverDir, databaseUrl: store.databaseUrl }, 'Packaged');
      service = await startService(dir, store.databaseUrl);
    });
    after(async () => {
      await children.killAll();
      await store?.dispose();
    });

    it(`has only the package, ${consumer.packages.join(' and ')} and what they need installed: not ${consumer.absent.join(', ')}`, () => {
      const installed = installedPackages(dir);
      for (const name of ['tessera-tokens', 'fastify-plugin', ...consumer.packages])
        assert.ok(installed.has(name), `${name} is not installed`);
      const unexpected = consumer.absent.filter((name) => installed.has(name));
      assert.deepEqual(unexpected, [], `installed although the service does not use them: ${unexpected.join(', ')}`);
    });

    it('loads every entry point, and opening a store of the other kind names the missing driver', async () => {
      const other =
        consumer.store === 'SQLite' ? { url: 'postgres://127.0.0.1:1/none', driver: 'pg' } : { url: 'sqlite::memory:', driver: 'libsql' };
      const script = [
        "await import('tessera-tokens/middleware/fastify');",
        "await import('tessera-tokens/middleware/express');",
        "const { TesseraVerifier } = await import('tessera-tokens/verifier');",
        `await TesseraVerifier.open({ databaseUrl: '${other.url}' }).then(() => console.log('opened'), (error) => console.log(error.message));`,
      ].join('\n');
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
        cwd: dir,
        env: childEnvironment(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.add(child);
      let output = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      assert.equal(code, 0, output);
      assert.equal(
        output.trim(),
        `This DATABASE_URL needs the package ${other.driver}, which is not installed (npm install ${other.driver}).`,
      );
    });

    it("accepts Tessera's tokens and Basic, and answers the principal", async () => {
      const admin = await adminTokenRequest(tessera.baseUrl, app);
      const anonymous = await anonymousTokenRequest(tessera.baseUrl, app);
      assert.equal(admin.status, 200, admin.text);
      assert.equal(anonymous.status, 200, anonymous.text);
      const asAdmin = await call(url('/whoami'), { headers: { authorization: bearer(admin.body.access_token) } });
      assert.equal(asAdmin.status, 200, asAdmin.text);
      assert.deepEqual(asAdmin.body, {
        appId: app.appId,
        kind: 'admin',
        id: app.adminId,
        auth: 'bearer',
        expiresAt: null,
        scopes: null,
        clientId: null,
      });
      const asAnonymous = await call(url('/whoami'), { headers: { authorization: bearer(anonymous.body.access_token) } });
      assert.deepEqual(asAnonymous.body, {
        appId: app.appId,
        kind: 'anonymous',
        id: 'ANONYMOUS',
        auth: 'bearer',
        expiresAt: null,
        scopes: null,
        clientId: null,
      });
      const asBasic = await call(url('/whoami'), { headers: { authorization: basic(app.appId) } });
      assert.deepEqual(asBasic.body, {
        appId: app.appId,
        kind: 'anonymous',
        id: 'ANONYMOUS',
        auth: 'basic',
        expiresAt: null,
        scopes: null,
        clientId: null,
      });
      const report = await call(url('/reports'), { headers: { authorization: bearer(admin.body.access_token) } });
      assert.deepEqual(report.body, { appId: app.appId, adminId: app.adminId });
    });

    it("refuses with the contract's errors: 401 without a header or with an unknown token, 403 on an admin route", async () => {
      const missing = await call(url('/whoami'));
      assert.deepEqual(errorProblems(missing, 401, 'UNAUTHORIZED'), [], missing.text);
      assert.equal(missing.headers?.get('www-authenticate'), 'Basic realm="tessera", Bearer realm="tessera"');
      const unknown = await call(url('/whoami'), { headers: { authorization: bearer('A'.repeat(43)) } });
      assert.deepEqual(errorProblems(unknown, 401, 'INVALID_TOKEN'), [], unknown.text);
      assert.equal(unknown.headers?.get('www-authenticate'), 'Bearer error="invalid_token"');
      const notAdmin = await call(url('/reports'), { headers: { authorization: basic(app.appId) } });
      assert.deepEqual(errorProblems(notAdmin, 403, 'ADMIN_REQUIRED'), [], notAdmin.text);
      const health = await call(`${service.baseUrl}/healthz`);
      assert.equal(health.status, 200, health.text);
    });

    it('stops on SIGTERM, as the page shows: the server, then the store, and the process exits 0', async () => {
      assert.deepEqual(await terminate(service, 5_000), { code: 0, signal: null }, service.stdout());
      assert.deepEqual(await terminate(tessera), { code: 0, signal: null });
    });
  });
}

describe('tessera-tokens/client in server code, installed from the packed package, as docs/client.md shows', () => {
  let store: { databaseUrl: string; dispose(): Promise<void> };
  let tessera: ServerProcess;
  let app: CreatedApp;

  before(async () => {
    store = await createStore('SQLite', clientDir);
    const entry = join(serverDir, 'node_modules', 'tessera-server', 'bin', 'tessera');
    tessera = await startTessera(children, { entry, cwd: serverDir, databaseUrl: store.databaseUrl });
    app = await createAppWithCli(children, { entry, cwd: serverDir, databaseUrl: store.databaseUrl }, 'Packaged client');
  });
  after(async () => {
    await children.killAll();
    await store?.dispose();
  });

  async function runClient(env: Record<string, string>): Promise<Run> {
    const child = spawn(process.execPath, ['client.mjs'], {
      cwd: clientDir,
      env: childEnvironment(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    return { code, stdout, stderr };
  }

  const env = (clientSecret: string) => ({
    TESSERA_URL: tessera.baseUrl,
    TESSERA_APP_ID: app.appId,
    TESSERA_CLIENT_ID: app.clientId,
    TESSERA_CLIENT_SECRET: clientSecret,
  });

  it('needs nothing besides the package', () => {
    // The package's own dependencies: fastify-plugin (the middleware), lru-cache (the verifiers' caches), jose (the JWT verifier).
    assert.deepEqual([...installedPackages(clientDir)].filter((name) => name !== '').sort(), [
      'fastify-plugin',
      'jose',
      'lru-cache',
      'tessera-tokens',
    ]);
  });

  it('gets a 15-minute admin token and reads the app with it, then exits (no timer keeps it alive)', async () => {
    const started = Date.now();
    const run = await runClient(env(app.clientSecret));
    assert.equal(run.code, 0, run.stderr);
    const until = /^admin of "Packaged client", with a token that works until (\S+)\n$/.exec(run.stdout)?.[1];
    assert.ok(until !== undefined, run.stdout);
    const expiresAt = Date.parse(until);
    assert.ok(expiresAt >= started + 900_000 && expiresAt <= Date.now() + 900_000, until);
  });

  it('prints the typed error of a wrong secret and exits 1', async () => {
    const run = await runClient(env('not-the-secret'));
    assert.equal(run.code, 1, run.stdout);
    assert.match(run.stderr, /^401 invalid_client: /);
    assert.ok(!run.stderr.includes('not-the-secret'));
  });
});
