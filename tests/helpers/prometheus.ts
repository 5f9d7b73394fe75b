import assert from 'node:assert/strict';

/** One sample of Prometheus text: `name{label="value",…} 12`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (format 0.0.4); comments are skipped. */
export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)( \S+)?$/.exec(line);
    assert.ok(match !== null, `not a sample line: ${line}`);
    samples.push({ name: match[1]!, labels: parseLabels(match[2] ?? ''), value: parseValue(match[3]!) });
  }
  return samples;
}

function parseValue(text: string): number {
  if (text === '+Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  return Number(text);
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  const pattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;
  const inner = text.slice(1, -1);
  pattern.lastIndex = 0;
  while (pattern.lastIndex < inner.length) {
    const match = pattern.exec(inner);
    assert.ok(match !== null, `bad labels: ${text}`);
    labels[match[1]!] = match[2]!.replace(/\\(.)/g, (_all, escaped: string) => (escaped === 'n' ? '\n' : escaped));
  }
  return labels;
}

/** The metrics of a scrape, to read samples by name and labels. */
export class Scrape {
  constructor(readonly samples: Sample[]) {}

  /** The value of the one sample with this name and these labels (among others); 0 when there is none. */
  value(name: string, labels: Record<string, string> = {}): number {
    const found = this.samples.filter(
      (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
    );
    assert.ok(found.length <= 1, `${name} ${JSON.stringify(labels)} names ${found.length} samples`);
    return found[0]?.value ?? 0;
  }

  /** Every sample's name and labels, as one string each: what a series count compares. */
  seriesKeys(prefix = ''): Set<string> {
    return new Set(
      this.samples
        .filter((sample) => sample.name.startsWith(prefix))
        .map((sample) => `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`),
    );
  }
}

/** GET the metrics and parse them. */
export async function scrape(metricsUrl: string, accept?: string): Promise<Scrape> {
  const response = await fetch(metricsUrl, accept === undefined ? {} : { headers: { accept } });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return new Scrape(parsePrometheusText(text));
}
