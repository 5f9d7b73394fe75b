import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CreatedApp } from '../../src/apps/service.js';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import { createTessera } from '../../src/tessera.js';
import { adminFields, anonymousFields, requestToken } from '../helpers/http.js';
import { freePort, startServerProcess, TESSERA_MAIN, type ServerProcess } from '../helpers/process.js';

// A real Prometheus (Debian's package) scrapes a real `tessera serve` with METRICS_PORT=0, and what
// it stores matches the token requests sent; it evaluates docs/alerts.yml against what it scraped.

const PROMETHEUS = '/usr/bin/prometheus';
const ALERT_RULES = join(PACKAGE_ROOT, 'docs', 'alerts.yml');
const ANONYMOUS = 300;
const ADMIN = 50;
const REFUSED = 20;

let work: string;
let app: CreatedApp;
let tessera: ServerProcess | undefined;
let prometheus: ChildProcess | undefined;
let prometheusUrl: string;
let metricsUrl: string;

/** Waits for `condition` to hold, polling; fails with `what` after `timeoutMs`. */
async function waitFor<T>(what: string, condition: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

interface VectorSample {
  metric: Record<string, string>;
  value: [number, string];
}

/** An instant query of Prometheus' HTTP API. */
async function query(promql: string, time?: number): Promise<VectorSample[]> {
  const url = new URL('/api/v1/query', prometheusUrl);
  url.searchParams.set('query', promql);
  if (time !== undefined) url.searchParams.set('time', String(time));
  const response = await fetch(url);
  const body = (await response.json()) as { status: string; data: { resultType: string; result: VectorSample[] } };
  assert.equal(body.status, 'success', JSON.stringify(body));
  return body.data.result;
}

/** The value of a query that yields one sample, with its timestamp; undefined while it yields none. */
async function single(promql: string, time?: number): Promise<{ value: number; at: number } | undefined> {
  const result = await query(promql, time);
  if (result.length === 0) return undefined;
  assert.equal(result.length, 1, JSON.stringify(result));
  return { value: Number(result[0]!.value[1]), at: result[0]!.value[0] };
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'tessera-prometheus-'));
  const databasePath = join(work, 'tessera.db');
  const store = openSqliteStore(databasePath);
  app = await createTessera({ store }).apps.create('Scraped app');
  await store.close();

  tessera = await startServerProcess({
    entry: TESSERA_MAIN,
    cwd: work,
    env: { DATABASE_URL: `sqlite:${databasePath}`, METRICS_PORT: '0', RATE_LIMITS: 'off', DEMO_APP: 'off' },
  });
  metricsUrl = await waitFor('the metrics URL in the log', async () => /"metrics on (http:\/\/[^"]+)"/.exec(tessera!.stdout())?.[1]);
  const target = new URL(metricsUrl);

  const port = await freePort();
  prometheusUrl = `http://127.0.0.1:${port}`;
  writeFileSync(
    join(work, 'prometheus.yml'),
    [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      'rule_files:',
      `  - ${JSON.stringify(ALERT_RULES)}`,
      'scrape_configs:',
      '  - job_name: tessera',
      `    metrics_path: ${target.pathname}`,
      '    static_configs:',
      `      - targets: ['${target.host}']`,
      '',
    ].join('\n'),
  );
  prometheus = spawn(
    PROMETHEUS,
    [
      `--config.file=${join(work, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(work, 'prometheus-data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { cwd: work, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let prometheusLog = '';
  prometheus.stderr!.setEncoding('utf8').on('data', (chunk: string) => (prometheusLog = (prometheusLog + chunk).slice(-4000)));
  await waitFor(`Prometheus to be ready (${prometheusLog})`, async () => ((await fetch(`${prometheusUrl}/-/ready`)).ok ? true : undefined));
});

after(async () => {
  const stopped: Promise<unknown>[] = [];
  if (prometheus !== undefined && prometheus.exitCode === null) {
    stopped.push(new Promise((resolve) => prometheus!.once('exit', resolve)));
    prometheus.kill('SIGTERM');
  }
  if (tessera !== undefined && tessera.child.exitCode === null) {
    stopped.push(tessera.exited);
    tessera.child.kill('SIGTERM');
  }
  await Promise.all(stopped);
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('Prometheus scraping tessera serve', { skip: existsSync(PROMETHEUS) ? false : `${PROMETHEUS} is not installed` }, () => {
  it('is up, with the store up', async () => {
    await waitFor('up{job="tessera"} == 1', async () => ((await single('up{job="tessera"}'))?.value === 1 ? true : undefined));
    assert.equal((await single('tessera_store_up{job="tessera"}'))?.value, 1);
    // Every counter is there from the first scrape, at 0: increase() then counts from the start.
    assert.equal((await single('tessera_tokens_issued_total{job="tessera",kind="anonymous"}'))?.value, 0);
  });

  it('stores the counts and the rate of the token requests sent', async () => {
    const target = { app, appUrl: `${tessera!.baseUrl}/api/apps/${app.appId}` };
    const sends = [
      ...Array.from({ length: ANONYMOUS }, () => () => requestToken(target, anonymousFields(target))),
      ...Array.from({ length: ADMIN }, () => () => requestToken(target, adminFields(target))),
      ...Array.from({ length: REFUSED }, () => () => requestToken(target, adminFields(target, { client_secret: 'wrong' }))),
    ];
    const statuses: number[] = [];
    for (let start = 0; start < sends.length; start += 25) {
      statuses.push(...(await Promise.all(sends.slice(start, start + 25).map(async (send) => (await send()).status))));
    }
    assert.equal(statuses.filter((status) => status === 200).length, ANONYMOUS + ADMIN);
    assert.equal(statuses.filter((status) => status === 401).length, REFUSED);

    const counts = {
      anonymous: 'tessera_tokens_issued_total{job="tessera",kind="anonymous"}',
      admin: 'tessera_tokens_issued_total{job="tessera",kind="admin"}',
      refused: 'tessera_token_refusals_total{job="tessera",reason="invalid_client",kind="admin"}',
    };
    await waitFor('the counts to be scraped', async () => {
      const anonymous = await single(counts.anonymous);
      const admin = await single(counts.admin);
      const refused = await single(counts.refused);
      return anonymous?.value === ANONYMOUS && admin?.value === ADMIN && refused?.value === REFUSED ? true : undefined;
    });
    // When the last scrape was (an instant query's own timestamp is the time of the query).
    const latest = (await single(`timestamp(${counts.anonymous})`))!.value;
    // Evaluated at the last scrape, increase() is not extrapolated past it: the counts sent, exactly.
    const window = 120;
    assert.equal((await single(`increase(${counts.anonymous}[${window}s])`, latest))?.value, ANONYMOUS);
    assert.equal((await single(`increase(${counts.admin}[${window}s])`, latest))?.value, ADMIN);
    assert.equal((await single(`increase(${counts.refused}[${window}s])`, latest))?.value, REFUSED);
    const rate = (await single(`rate(${counts.anonymous}[${window}s])`, latest))!.value;
    assert.ok(Math.abs(rate * window - ANONYMOUS) < 1e-6, `rate ${rate}/s over ${window} s`);
    const requests = await single(
      `sum(tessera_http_request_duration_seconds_count{job="tessera",route="/api/apps/:appId/oauth2/token",method="POST"})`,
      latest,
    );
    assert.equal(requests?.value, ANONYMOUS + ADMIN + REFUSED);
  });

  it('evaluates every alerting rule of docs/alerts.yml without error, none firing on a healthy instance', async () => {
    const alerts = [...readFileSync(ALERT_RULES, 'utf8').matchAll(/^\s*- alert: (\w+)$/gm)].map((match) => match[1]!);
    assert.ok(alerts.length >= 8, alerts.join());
    type Rule = { name: string; health: string; lastError?: string; lastEvaluation: string; state: string };
    const rules = await waitFor('every rule evaluated', async () => {
      const body = (await (await fetch(`${prometheusUrl}/api/v1/rules?type=alert`)).json()) as { data: { groups: { rules: Rule[] }[] } };
      const all = body.data.groups.flatMap((group) => group.rules);
      return all.length === alerts.length && all.every((rule) => !rule.lastEvaluation.startsWith('0001-')) ? all : undefined;
    });
    assert.deepEqual(rules.map((rule) => rule.name).sort(), [...alerts].sort());
    for (const rule of rules) {
      assert.equal(rule.health, 'ok', `${rule.name}: ${rule.lastError ?? ''}`);
      assert.notEqual(rule.state, 'firing', rule.name);
    }
  });

  it('closes the metrics listener with the server on SIGTERM', async () => {
    tessera!.child.kill('SIGTERM');
    assert.deepEqual(await tessera!.exited, { code: 0, signal: null });
    await assert.rejects(fetch(metricsUrl));
  });
});
