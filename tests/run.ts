import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { finished } from 'node:stream/promises';
import { run } from 'node:test';
import { spec, tap } from 'node:test/reporters';
import { fileURLToPath } from 'node:url';

/**
 * `npm test`: every test file, and the HTTP, CLI and mail tests (tests/http/, tests/cli/,
 * tests/mail/) again on PostgreSQL. Files that own their store and port (a fresh SQLite file or PostgreSQL database, a
 * port the kernel picks, a Redis key prefix of their own) run in parallel. Then, one at a time, the
 * files that must have the machine to themselves: they restart PostgreSQL for everyone
 * (tests/cluster/outage), time answers to within a fraction of a second, which files working
 * beside them would make late, or drive Chromium.
 *
 * Folders below tests/ given as arguments narrow the run to their files, in the same passes:
 * `npm run test:fast` is `node dist/tests/run.js unit/ http/`; with `--sqlite-only`, the PostgreSQL
 * passes are left out, as CI runs it on the Node lines other than the main one.
 */

/**
 * Folders and files (below tests/) run one at a time, after the others: they time answers, act on
 * the whole machine, or (Chromium) take so much of it that the files beside them would time out.
 * Files that only spawn, kill (-9) and install their own processes on their own stores run in
 * parallel with the rest (`storage/`, `package/`, `crash/crash`, the CLI's `process/` files below
 * not named here): they time nothing, and one after the other they took as long.
 */
const SERIAL = [
  // Deadlines of a second and less: the CLI's changes seen by a running server, shutdown, the server
  // on a pseudo-terminal, Prometheus scraping, connections cut while commands run.
  'process/cli.test.js',
  'process/logs.test.js',
  'process/postgres-connection-loss.test.js',
  // A PostgreSQL of its own hung (SIGSTOP) for seconds, timed against PG_QUERY_TIMEOUT_MS, and
  // against SHUTDOWN_STORE_TIMEOUT_MS.
  'process/event-outage.test.js',
  'process/shutdown-hung-database.test.js',
  'process/prometheus.test.js',
  'process/shutdown.test.js',
  'crash/terminate-connections.test.js',
  // Restarts the machine's PostgreSQL for everyone (outage); instances timed against each other.
  'cluster/',
  // nginx and PgBouncer of their own; 503s timed to PG_QUERY_TIMEOUT_MS.
  'proxy/',
  // A Patroni cluster of its own (etcd, two PostgreSQL, HAProxy) failed over under load: 503 windows timed.
  'ha/',
  // A revoked token refused within 1 s, an expired one within 250 ms.
  'middleware/express.test.js',
  'middleware/fastify.test.js',
  // Answers within 500 ms while 300 slow clients hold connections; cut-offs timed to the timeout.
  'http/slow-clients.test.js',
  // Two releases under load, a change on one awaited on the other within a second.
  'upgrade/rolling.test.js',
];

/**
 * The files that take longest (the last runs' summary, below), started first in their pass, so that
 * no long file starts last and leaves the other slots idle while it finishes. Chromium's files are
 * among them: they run in parallel with files that time nothing, and the files that do time
 * something run later, one at a time, without a browser beside them.
 */
const LONGEST_FIRST = [
  'store/postgres.test.js',
  'crash/operator-audit.test.js',
  'browser/portal-accessibility.test.js',
  'browser/portal-events.test.js',
  'property/',
  'process/developers-cli.test.js',
  'package/install.test.js',
  'process/least-privilege.test.js',
  'storage/anonymous-tokens.test.js',
  'process/leaks.test.js',
  'store/housekeeping.test.js',
  'crash/crash.test.js',
  'browser/',
];

/** The tests that run on each store: HTTP, the operator CLI's import and export beside a server, and mail. */
const ON_EACH_STORE = ['http/', 'cli/', 'mail/'];

/** How many of the slowest files the summary names. */
const SLOWEST_SHOWN = 15;

/** Most files wait on sockets and databases rather than compute: twice the cores keeps them busy. */
const CONCURRENCY = 2 * availableParallelism();

// This file compiles to <outDir>/tests/run.js, beside the compiled test files.
const TESTS = fileURLToPath(new URL('.', import.meta.url));

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) =>
      entry.isDirectory() ? testFiles(join(dir, entry.name)) : entry.name.endsWith('.test.js') ? [join(dir, entry.name)] : [],
    )
    .sort();
}

const under = (file: string) => relative(TESTS, file).split('\\').join('/');
/** `entry` is a folder (ending in '/') that holds the file, or the file itself. */
const names = (entry: string, file: string) => (entry.endsWith('/') ? under(file).startsWith(entry) : under(file) === entry);
const isSerial = (file: string) => SERIAL.some((entry) => names(entry, file));
const startRank = (file: string) => {
  const rank = LONGEST_FIRST.findIndex((entry) => names(entry, file));
  return rank === -1 ? LONGEST_FIRST.length : rank;
};
/** `files` (sorted by name) with the longest first, as `LONGEST_FIRST` says; the rest by name. */
const longestFirst = (files: string[]) =>
  files
    .map((file) => ({ file, rank: startRank(file) }))
    .sort((a, b) => a.rank - b.rank)
    .map(({ file }) => file);

interface Pass {
  name: string;
  files: string[];
  concurrency: number;
  store: 'sqlite' | 'postgres';
}

interface Outcome {
  passed: number;
  failed: number;
  /** "file › test" for each failed test, so that a log cut short still names them at its end. */
  failures: string[];
  /** Seconds each file's top-level tests took, summed: where the run's time goes. */
  seconds: Map<string, number>;
}

interface TestEvent {
  name: string;
  nesting: number;
  file?: string;
  details: { type?: string; duration_ms?: number };
}

/** Runs one pass with the reporter `node --test` would use here; resolves with how many tests passed and failed. */
async function runPass(pass: Pass): Promise<Outcome> {
  const outcome: Outcome = { passed: 0, failed: 0, failures: [], seconds: new Map() };
  if (pass.files.length === 0) return outcome;
  console.log(`# ${pass.name}: ${pass.files.length} files, ${pass.concurrency} at a time, TEST_STORE=${pass.store}`);
  // Each test file is a child process that inherits the environment as it is when it starts.
  process.env.TEST_STORE = pass.store;
  const stream = run({ files: pass.files, concurrency: pass.concurrency });
  const timeFile = (event: TestEvent) => {
    if (event.nesting !== 0 || event.file === undefined) return;
    const file = `${pass.store === 'postgres' ? '(postgres) ' : ''}${under(event.file)}`;
    outcome.seconds.set(file, (outcome.seconds.get(file) ?? 0) + (event.details.duration_ms ?? 0) / 1000);
  };
  stream.on('test:pass', (event: TestEvent) => {
    timeFile(event);
    if (event.details.type !== 'suite') outcome.passed++;
  });
  stream.on('test:fail', (event: TestEvent) => {
    timeFile(event);
    if (event.details.type === 'suite') return;
    outcome.failed++;
    outcome.failures.push(`${event.file === undefined ? '' : `${under(event.file)} › `}${event.name}`);
  });
  const report = stream.compose(process.stdout.isTTY ? new spec() : tap);
  report.pipe(process.stdout, { end: false });
  await finished(report);
  return outcome;
}

async function main(): Promise<void> {
  const every = testFiles(TESTS);
  const unmatched = [...SERIAL, ...LONGEST_FIRST].filter((entry) => !every.some((file) => names(entry, file)));
  if (unmatched.length > 0) throw new Error(`tests/run.ts names what is not there (renamed?): ${unmatched.join(', ')}`);
  const args = process.argv.slice(2);
  // The PostgreSQL passes run the same HTTP tests again on the other store: what they add does not
  // depend on the Node.js line, so the other lines' fast suites leave them to the main one.
  const sqliteOnly = args.includes('--sqlite-only');
  // A folder (`http/`), or one file (`http/token-endpoint.test.js`).
  const folders = args
    .filter((arg) => arg !== '--sqlite-only')
    .map((folder) => (folder.endsWith('/') || folder.endsWith('.test.js') ? folder : `${folder}/`));
  const absent = folders.filter((folder) => !every.some((file) => names(folder, file)));
  if (absent.length > 0) throw new Error(`No test files below tests/${absent.join(', tests/')}`);
  const all = folders.length === 0 ? every : every.filter((file) => folders.some((folder) => names(folder, file)));
  const parallel = longestFirst(all.filter((file) => !isSerial(file)));
  const serial = all.filter(isSerial);
  const onEachStore = (files: string[]) => files.filter((file) => ON_EACH_STORE.some((folder) => under(file).startsWith(folder)));
  const storePasses: Pass[] = [
    { name: 'in parallel', files: parallel, concurrency: CONCURRENCY, store: 'sqlite' },
    { name: 'HTTP and CLI on PostgreSQL, in parallel', files: onEachStore(parallel), concurrency: CONCURRENCY, store: 'postgres' },
    { name: 'one at a time', files: serial, concurrency: 1, store: 'sqlite' },
    { name: 'HTTP and CLI on PostgreSQL, one at a time', files: onEachStore(serial), concurrency: 1, store: 'postgres' },
  ];
  const passes = sqliteOnly ? storePasses.filter((pass) => pass.store === 'sqlite') : storePasses;
  const failures: string[] = [];
  const failedTests: string[] = [];
  const seconds = new Map<string, number>();
  const total = { passed: 0, failed: 0 };
  for (const pass of passes) {
    const outcome = await runPass(pass);
    total.passed += outcome.passed;
    total.failed += outcome.failed;
    if (outcome.failed > 0) failures.push(`${pass.name}: ${outcome.failed}`);
    failedTests.push(...outcome.failures.map((test) => `${pass.name}: ${test}`));
    for (const [file, time] of outcome.seconds) seconds.set(file, time);
  }
  // The summary that closes the log, over every pass (each above ends with its own).
  const slowest = [...seconds].sort((a, b) => b[1] - a[1]).slice(0, SLOWEST_SHOWN);
  console.log(`# the ${slowest.length} slowest files (seconds):`);
  for (const [file, time] of slowest) console.log(`#   ${time.toFixed(1).padStart(6)}  ${file}`);
  for (const test of failedTests) console.log(`# failed: ${test}`);
  const command = folders.length === 0 ? 'npm test' : `tests below ${folders.join(' ')}`;
  console.log(failures.length === 0 ? `# ${command}: every pass passed` : `# ${command}: FAILED tests (${failures.join('; ')})`);
  console.log(`tests: ${total.passed} passed, ${total.failed} failed`);
  process.exitCode = failures.length === 0 ? 0 : 1;
}

await main();
