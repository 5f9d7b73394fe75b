/**
 * `npm run bench:tail [-- --seconds S] [--stores sqlite,postgres] [--connections 1,50]`: the tail alone (bench/tail.ts),
 * on fresh stores, against the ceiling in the same run. Prints the table and the goals in Markdown.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ceilingCases } from './cases.js';
import { CEILING } from './cases.js';
import { requireTools, runLoad, startPinnedServer, type RunningServer } from './processes.js';
import { ceilingTailScenarios, measureTail, tailChecks, tailTable, tesseraTailScenarios, type TailTarget } from './tail.js';
import { startTessera, startTesseraOnPostgres, type TesseraTarget } from './targets.js';

const DIST = fileURLToPath(new URL('../', import.meta.url));
const log = (line: string) => process.stderr.write(`${line}\n`);

function option(argv: string[], flag: string, fallback: string): string {
  const index = argv.indexOf(flag);
  return index >= 0 ? (argv[index + 1] ?? fallback) : fallback;
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const seconds = Number(option(argv, '--seconds', '20'));
  const stores = option(argv, '--stores', 'sqlite,postgres').split(',');
  const connectionCounts = option(argv, '--connections', '1,50').split(',').map(Number);
  requireTools('the tail benchmark');
  const workDir = mkdtempSync(join(tmpdir(), 'tessera-tail-'));
  const servers: RunningServer[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const ceiling = await startPinnedServer('ceiling', join(DIST, 'bench', 'servers', 'ceiling.js'), [], {});
    servers.push(ceiling);
    const targets: TesseraTarget[] = [];
    if (stores.includes('sqlite')) {
      targets.push(await startTessera('tessera/sqlite', `sqlite:${join(workDir, 'tessera.db')}`, workDir, 1_000, async () => {}));
    }
    if (stores.includes('postgres')) {
      const postgres = await startTesseraOnPostgres(workDir, 1_000);
      if (postgres !== undefined) {
        targets.push(postgres);
        cleanups.push(postgres.cleanup);
      }
    }
    servers.push(...targets.map((t) => t.server));
    const tailTargets: TailTarget[] = [
      {
        target: CEILING,
        pid: ceiling.child.pid!,
        scenarios: ceilingTailScenarios(ceilingCases(ceiling.url, String(ceiling.announcement.token))),
      },
      ...targets.map((t) => ({
        target: t.fixture.target,
        pid: t.server.child.pid!,
        probeFile: t.probeFile,
        scenarios: tesseraTailScenarios(t.fixture),
      })),
    ];
    log(`warm-up: 3 s of each scenario's load at 50 connections, discarded`);
    for (const target of tailTargets) {
      for (const scenario of target.scenarios.filter((s) => s.beside === undefined)) await runLoad(scenario.measured, 50, 3);
    }
    log(`tail: ${seconds} s a scenario`);
    const measurements = await measureTail(tailTargets, seconds, log, connectionCounts);
    const checks = tailChecks(measurements, CEILING);
    process.stdout.write(`${tailTable(measurements, CEILING)}\n\n`);
    process.stdout.write(`${checks.map((c) => `| ${c.met ? '✅' : '❌'} | ${c.description} | ${c.value} |`).join('\n')}\n`);
    return measurements.some((m) => m.failures > 0) ? 1 : 0;
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    await Promise.all(cleanups.map((cleanup) => cleanup().catch(() => {})));
    rmSync(workDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
