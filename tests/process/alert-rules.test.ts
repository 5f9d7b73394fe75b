import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { REPO_ROOT } from '../helpers/process.js';

/**
 * docs/alerts.yml and docs/grafana-dashboard.json, checked without a running Tessera: Prometheus's
 * own promtool validates the rules and runs their unit tests (docs/alerts.test.yml: synthetic series,
 * each alert firing where it must and only there), and validates every dashboard query as PromQL.
 * Every metric the rules and the dashboard query must be one docs/deployment.md lists, or one of
 * prom-client's defaults: renaming a metric without them breaks this test.
 */

const PROMTOOL = process.env.PROMTOOL ?? 'promtool';
const ALERTS = join(REPO_ROOT, 'docs', 'alerts.yml');
const ALERT_TESTS = join(REPO_ROOT, 'docs', 'alerts.test.yml');
const DASHBOARD = join(REPO_ROOT, 'docs', 'grafana-dashboard.json');
const DEPLOYMENT = join(REPO_ROOT, 'docs', 'deployment.md');

/** What prom-client's `collectDefaultMetrics()` serves (prom-client 15, on Linux), and Prometheus's own `up`. */
const DEFAULT_METRICS = new Set([
  'up',
  'process_cpu_user_seconds_total',
  'process_cpu_system_seconds_total',
  'process_cpu_seconds_total',
  'process_start_time_seconds',
  'process_resident_memory_bytes',
  'process_virtual_memory_bytes',
  'process_heap_bytes',
  'process_open_fds',
  'process_max_fds',
  'nodejs_eventloop_lag_seconds',
  'nodejs_eventloop_lag_min_seconds',
  'nodejs_eventloop_lag_max_seconds',
  'nodejs_eventloop_lag_mean_seconds',
  'nodejs_eventloop_lag_stddev_seconds',
  'nodejs_eventloop_lag_p50_seconds',
  'nodejs_eventloop_lag_p90_seconds',
  'nodejs_eventloop_lag_p99_seconds',
  'nodejs_active_resources',
  'nodejs_active_resources_total',
  'nodejs_active_handles',
  'nodejs_active_handles_total',
  'nodejs_active_requests',
  'nodejs_active_requests_total',
  'nodejs_heap_size_total_bytes',
  'nodejs_heap_size_used_bytes',
  'nodejs_external_memory_bytes',
  'nodejs_heap_space_size_total_bytes',
  'nodejs_heap_space_size_used_bytes',
  'nodejs_heap_space_size_available_bytes',
  'nodejs_version_info',
  'nodejs_gc_duration_seconds_bucket',
  'nodejs_gc_duration_seconds_sum',
  'nodejs_gc_duration_seconds_count',
]);

interface PromClient {
  Registry: new () => { getMetricsAsJSON(): Promise<{ name: string; type: string }[]>; clear(): void };
  collectDefaultMetrics(options: { register: unknown }): void;
}

/** The series of prom-client's default metrics, from prom-client itself where it is installed; undefined where not. */
async function promClientDefaults(): Promise<string[] | undefined> {
  const specifier = 'prom-client'; // a server package this checkout may lack: not a static import
  let client: PromClient;
  try {
    client = (await import(specifier)) as PromClient;
  } catch {
    return undefined;
  }
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const metrics = await registry.getMetricsAsJSON();
  registry.clear();
  return metrics.flatMap(({ name, type }) =>
    type === 'histogram' ? ['_bucket', '_sum', '_count'].map((suffix) => name + suffix) : [name],
  );
}

function promtool(args: string[]): { status: number | null; output: string } {
  const run = spawnSync(PROMTOOL, args, { cwd: REPO_ROOT, encoding: 'utf8', timeout: 60_000 });
  if (run.error !== undefined) {
    assert.fail(`cannot run ${PROMTOOL} (Debian's package \`prometheus\`; .ci/run installs it): ${run.error.message}`);
  }
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/**
 * The Tessera metrics docs/deployment.md documents: the name in backticks that starts a table row or
 * a list item. A histogram's series are its name with `_bucket`, `_sum` and `_count`.
 */
function documentedMetrics(): Set<string> {
  const names = new Set<string>();
  for (const line of readFileSync(DEPLOYMENT, 'utf8').split('\n')) {
    const name = /^\s*[|*-]\s*`(tessera_[a-z0-9_]+)[`{]/.exec(line)?.[1];
    if (name === undefined) continue;
    names.add(name);
    if (/\bhistogram\b/i.test(line)) for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
  }
  return names;
}

const PROMQL_WORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'inf',
  'nan',
]);

/** The metric names a PromQL expression selects: what is left once strings, matchers, ranges, groupings and calls are set aside. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names: string[] = [];
  for (const match of bare.matchAll(/(?<![\w.$])[a-zA-Z_:][a-zA-Z0-9_:]*(?![\w:])(?!\s*\()/g)) {
    if (!PROMQL_WORDS.has(match[0].toLowerCase())) names.push(match[0]);
  }
  return names;
}

interface AlertRule {
  alert: string;
  expr: string;
  /** The rule's lines as written, for the checks of its fields. */
  text: string;
}

/** The alerts of docs/alerts.yml: each `- alert:` item with its `expr:` (inline, or a `|` block below it). */
function alertRules(): AlertRule[] {
  const lines = readFileSync(ALERTS, 'utf8').split('\n');
  const rules: AlertRule[] = [];
  for (let i = 0; i < lines.length; i++) {
    const alert = /^\s*- alert:\s*(\S+)/.exec(lines[i]!)?.[1];
    if (alert === undefined) continue;
    let end = i + 1;
    while (end < lines.length && !/^\s*- (alert|record):/.test(lines[end]!)) end++;
    const body = lines.slice(i, end);
    const exprAt = body.findIndex((line) => /^\s*expr:/.test(line));
    assert.ok(exprAt > 0, `${alert} has no expr`);
    const inline = /^\s*expr:\s*(.*)$/.exec(body[exprAt]!)![1]!.trim();
    let expr = inline;
    if (inline === '|' || inline === '>') {
      const indent = (line: string) => line.length - line.trimStart().length;
      const own = indent(body[exprAt]!);
      const block: string[] = [];
      for (const line of body.slice(exprAt + 1)) {
        if (line.trim() !== '' && indent(line) <= own) break;
        block.push(line.trim());
      }
      expr = block.join(' ');
    }
    rules.push({ alert, expr, text: body.join('\n') });
  }
  return rules;
}

/** GitHub's anchor of a Markdown heading. */
function anchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-');
}

function deploymentAnchors(): Set<string> {
  const headings = readFileSync(DEPLOYMENT, 'utf8')
    .split('\n')
    .map((line) => /^#{1,6}\s+(.*)$/.exec(line)?.[1])
    .filter((heading) => heading !== undefined);
  return new Set(headings.map(anchor));
}

function unknownMetrics(exprs: string[]): string[] {
  const known = new Set([...documentedMetrics(), ...DEFAULT_METRICS]);
  return [...new Set(exprs.flatMap(metricNames))].filter((name) => !known.has(name));
}

describe("prom-client's default metrics", () => {
  it('are those this test knows, where prom-client is installed', async (t) => {
    const actual = await promClientDefaults();
    if (actual === undefined) return t.skip('prom-client is not installed');
    const missing = [...DEFAULT_METRICS].filter((name) => name !== 'up' && !actual.includes(name));
    assert.deepEqual(missing, [], 'named here, but not served by prom-client');
  });
});

describe('alerting rules (docs/alerts.yml)', () => {
  it('pass `promtool check rules`', () => {
    const { status, output } = promtool(['check', 'rules', ALERTS]);
    assert.equal(status, 0, output);
    assert.match(output, /SUCCESS: \d+ rules found/);
  });

  it('pass their unit tests, `promtool test rules docs/alerts.test.yml`: each alert fires where it must, and only there', () => {
    const { status, output } = promtool(['test', 'rules', ALERT_TESTS]);
    assert.equal(status, 0, output);
    assert.match(output, /SUCCESS/);
  });

  it('are each unit-tested, firing and not firing', () => {
    const tests = readFileSync(ALERT_TESTS, 'utf8');
    for (const { alert } of alertRules()) {
      const evaluations = [...tests.matchAll(new RegExp(`alertname: ${alert}\\n\\s*exp_alerts:(.*)`, 'g'))].map((match) =>
        match[1]!.trim(),
      );
      assert.ok(evaluations.includes('[]'), `${alert}: no evaluation where it must not fire`);
      assert.ok(evaluations.includes(''), `${alert}: no evaluation where it fires`);
    }
  });

  it('each have a duration, a severity, a summary, a description and a runbook in docs/deployment.md', () => {
    const rules = alertRules();
    assert.ok(rules.length >= 7, `only ${rules.length} alerts`);
    const anchors = deploymentAnchors();
    for (const rule of rules) {
      assert.match(rule.text, /\n\s*for: \d+[smh]\n/, `${rule.alert}: no for:`);
      assert.match(rule.text, /\n\s*severity: (critical|warning)\n/, `${rule.alert}: no severity critical or warning`);
      assert.match(rule.text, /\n\s*summary: /, `${rule.alert}: no summary`);
      assert.match(rule.text, /\n\s*description: /, `${rule.alert}: no description`);
      const runbook = /\n\s*runbook_url: docs\/deployment\.md#(\S+)/.exec(rule.text)?.[1];
      assert.ok(runbook !== undefined, `${rule.alert}: no runbook_url into docs/deployment.md`);
      assert.ok(anchors.has(runbook), `${rule.alert}: docs/deployment.md has no heading #${runbook}`);
    }
  });

  it('query only metrics docs/deployment.md documents or prom-client serves by default', () => {
    assert.ok(documentedMetrics().size >= 15, 'docs/deployment.md has no table of metrics (`tessera_…` in the first column)');
    const exprs = alertRules().map((rule) => rule.expr);
    assert.deepEqual(
      exprs.flatMap(metricNames).filter((name) => name.startsWith('tessera_')).length > 0,
      true,
      'no tessera_ metric found in the rules',
    );
    assert.deepEqual(unknownMetrics(exprs), []);
  });
});

interface Target {
  expr?: string;
  datasource?: { type?: string; uid?: string };
}

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
  panels?: Panel[];
}

interface Dashboard {
  schemaVersion: number;
  uid: string;
  title: string;
  templating: { list: { name: string; type: string; query: unknown; datasource?: { uid?: string } }[] };
  panels: Panel[];
}

describe('Grafana dashboard (docs/grafana-dashboard.json)', () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
  const panels = dashboard.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]);
  const queried = panels.filter((panel) => panel.type !== 'row');
  const exprs = queried.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr ?? ''));
  const dir = mkdtempSync(join(tmpdir(), 'tessera-dashboard-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('is a dashboard Grafana imports: schema, a Prometheus data source variable, job and instance variables', () => {
    assert.ok(dashboard.schemaVersion >= 36, `schemaVersion ${dashboard.schemaVersion}`);
    assert.equal(typeof dashboard.uid, 'string');
    const variables = new Map(dashboard.templating.list.map((variable) => [variable.name, variable]));
    assert.equal(variables.get('datasource')?.type, 'datasource');
    assert.equal(variables.get('datasource')?.query, 'prometheus');
    for (const name of ['job', 'instance']) {
      assert.equal(variables.get(name)?.type, 'query', `no ${name} variable`);
      assert.equal(variables.get(name)?.datasource?.uid, '${datasource}');
    }
  });

  it('has panels with unique ids, inside the 24-column grid, not overlapping, each querying the chosen data source', () => {
    assert.ok(queried.length >= 20, `only ${queried.length} panels`);
    assert.equal(new Set(panels.map((panel) => panel.id)).size, panels.length, 'panel ids repeat');
    const cells = new Set<string>();
    for (const panel of panels) {
      const { x, y, w, h } = panel.gridPos;
      assert.ok(x >= 0 && w > 0 && x + w <= 24, `${panel.title}: outside the grid`);
      for (let row = y; row < y + h; row++) {
        for (let column = x; column < x + w; column++) {
          const cell = `${row}:${column}`;
          assert.ok(!cells.has(cell), `${panel.title} overlaps another panel at row ${row}, column ${column}`);
          cells.add(cell);
        }
      }
    }
    for (const panel of queried) {
      assert.equal(panel.datasource?.uid, '${datasource}', `${panel.title}: data source`);
      assert.ok((panel.targets ?? []).length > 0, `${panel.title}: no query`);
      for (const target of panel.targets ?? []) {
        assert.equal(target.datasource?.uid, '${datasource}', `${panel.title}: a query's data source`);
        assert.ok(typeof target.expr === 'string' && target.expr.trim() !== '', `${panel.title}: an empty query`);
      }
    }
  });

  it('has the panels on-call needs', () => {
    const all = exprs.join('\n');
    for (const metric of [
      'tessera_http_request_duration_seconds_count',
      'tessera_http_request_duration_seconds_bucket',
      'tessera_tokens_issued_total',
      'tessera_token_refusals_total',
      'tessera_rate_limited_total',
      'tessera_forward_auth_decisions_total',
      'tessera_store_up',
      'tessera_change_signal_up',
      'tessera_store_operation_duration_seconds_bucket',
      'tessera_store_errors_total',
      'tessera_group_commit_batch_size',
      'tessera_group_commit_duration_seconds_bucket',
      'tessera_cache_lookups_total',
      'tessera_event_buffer_events',
      'tessera_event_write_failures_total',
      'tessera_events_lost_total',
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_p99_seconds',
    ]) {
      assert.ok(all.includes(metric), `no panel queries ${metric}`);
    }
  });

  /** The queries as Grafana sends them, with the variables filled in (a scrape a minute). */
  const filled = exprs.map((expr) =>
    expr.replaceAll('$__rate_interval', '5m').replaceAll('$__interval', '1m').replaceAll('$job', 'tessera').replaceAll('$instance', '.*'),
  );

  it('has only queries that are valid PromQL (checked by promtool, with the variables filled in)', () => {
    assert.deepEqual(
      filled.filter((expr) => expr.includes('$')),
      [],
      'a variable the test does not fill in',
    );
    const rules = ['groups:', '  - name: dashboard', '    rules:'];
    filled.forEach((expr, i) => rules.push(`      - record: dashboard:query_${i}`, `        expr: ${JSON.stringify(expr)}`));
    const file = join(dir, 'dashboard-queries.yml');
    writeFileSync(file, `${rules.join('\n')}\n`);
    const { status, output } = promtool(['check', 'rules', file]);
    assert.equal(status, 0, output);
  });

  it('shows data in every query once each metric has a series with the labels of the contract', () => {
    // Each query i becomes an alert that fires while it returns nothing (absent), evaluated by
    // promtool over synthetic series; one alert on a metric that does not exist must fire, to show
    // that the check can fail.
    const rules = [
      'groups:',
      '  - name: dashboard',
      '    rules:',
      '      - alert: NoSuchMetric',
      '        expr: absent(tessera_no_such_metric)',
    ];
    filled.forEach((expr, i) => rules.push(`      - alert: Query${i}`, `        expr: ${JSON.stringify(`absent(${expr})`)}`));
    writeFileSync(join(dir, 'dashboard-absent.yml'), `${rules.join('\n')}\n`);
    const tests = [
      'rule_files: [dashboard-absent.yml]',
      'evaluation_interval: 1m',
      'tests:',
      '  - interval: 1m',
      '    input_series:',
      ...SYNTHETIC_SERIES.flatMap(([series, values]) => [
        `      - series: ${JSON.stringify(series)}`,
        `        values: ${JSON.stringify(values)}`,
      ]),
      '    alert_rule_test:',
      '      - eval_time: 20m',
      '        alertname: NoSuchMetric',
      '        exp_alerts: [{}]',
      ...filled.flatMap((_, i) => ['      - eval_time: 20m', `        alertname: Query${i}`, '        exp_alerts: []']),
    ];
    writeFileSync(join(dir, 'dashboard-absent.test.yml'), `${tests.join('\n')}\n`);
    const { status, output } = promtool(['test', 'rules', join(dir, 'dashboard-absent.test.yml')]);
    const empty = [...output.matchAll(/alertname: Query(\d+),/g)].map((match) => {
      const i = Number(match[1]);
      return `${queried.find((panel) => (panel.targets ?? []).some((target) => target.expr === exprs[i]))?.title}: ${exprs[i]}`;
    });
    assert.deepEqual(empty, [], 'queries that return nothing');
    assert.equal(status, 0, output);
  });

  it('queries only metrics docs/deployment.md documents or prom-client serves by default', () => {
    assert.ok(documentedMetrics().size >= 15, 'docs/deployment.md has no table of metrics (`tessera_…` in the first column)');
    assert.deepEqual(unknownMetrics(exprs), []);
  });
});

/** A series of each metric the dashboard shows, labelled as the metrics' contract says; counters grow, gauges stay. */
const SYNTHETIC_SERIES: [string, string][] = (() => {
  const series = (name: string, labels: string, values: string): [string, string] => [
    `${name}{job="tessera", instance="a:9464"${labels === '' ? '' : `, ${labels}`}}`,
    values,
  ];
  const counter = (name: string, labels = '') => series(name, labels, '0+10x30');
  const gauge = (name: string, labels: string, value: string) => series(name, labels, `${value}x30`);
  const histogram = (name: string, labels: string): [string, string][] => [
    ...['0.001', '0.01', '0.1', '+Inf'].map((le, i) => series(`${name}_bucket`, `${labels}, le="${le}"`, `0+${(i + 1) * 10}x30`)),
    series(`${name}_sum`, labels, '0+1x30'),
    series(`${name}_count`, labels, '0+40x30'),
  ];
  const http = 'tessera_http_request_duration_seconds';
  return [
    ...histogram(http, 'route="/api/apps/:appId/oauth2/token", method="POST", status_class="2xx"'),
    ...histogram(http, 'route="/api/oauth2/token", method="POST", status_class="5xx"'),
    ...histogram(http, 'route="/api/apps/:appId/whoami", method="GET", status_class="4xx"'),
    ...histogram(http, 'route="/api/forward-auth/*", method="GET", status_class="2xx"'),
    counter('tessera_tokens_issued_total', 'kind="admin"'),
    counter('tessera_token_refusals_total', 'reason="invalid_client", kind="admin"'),
    counter('tessera_tokens_revoked_total', 'kind="anonymous"'),
    counter('tessera_introspections_total', 'active="true"'),
    counter('tessera_forward_auth_decisions_total', 'decision="allowed"'),
    counter('tessera_rate_limited_total', 'limit="admin_failures_per_address"'),
    counter('tessera_cache_lookups_total', 'cache="apps", result="hit"'),
    counter('tessera_cache_lookups_total', 'cache="apps", result="miss"'),
    ...histogram('tessera_group_commit_batch_size', 'writer="tokens"'),
    ...histogram('tessera_group_commit_duration_seconds', 'writer="tokens"'),
    ...histogram('tessera_store_operation_duration_seconds', 'operation="tokens.find"'),
    counter('tessera_store_errors_total', 'operation="tokens.find"'),
    gauge('tessera_store_up', 'backend="sqlite"', '1'),
    gauge('tessera_change_signal_up', 'backend="sqlite"', '1'),
    gauge('tessera_event_buffer_events', '', '3'),
    counter('tessera_event_write_failures_total'),
    counter('tessera_events_lost_total', 'part="events", reason="buffer_full"'),
    gauge('tessera_build_info', 'version="0.1.0"', '1'),
    gauge('up', '', '1'),
    counter('process_cpu_seconds_total'),
    gauge('process_resident_memory_bytes', '', '100000000'),
    gauge('nodejs_heap_size_used_bytes', '', '50000000'),
    gauge('nodejs_eventloop_lag_p99_seconds', '', '0.01'),
    gauge('nodejs_eventloop_lag_mean_seconds', '', '0.005'),
  ];
})();

describe('metricNames', () => {
  it('finds the selected metrics and nothing else', () => {
    assert.deepEqual(
      metricNames(
        'histogram_quantile(0.99, sum by (job, le) (rate(a_bucket{route=~"/x|y", le!="b"}[5m]))) > 0.25 and on(job) sum without (c) (rate(d_total[$__rate_interval] offset 5m)) / ignoring(e) up',
      ),
      ['a_bucket', 'd_total', 'up'],
    );
  });
});
