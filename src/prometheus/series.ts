/**
 * The figures behind the metrics, kept as plain numbers: a request adds to them without building a
 * label or looking one up (prom-client's own `observe` costs about 0.5 µs, a whole budget of
 * `whoami`); `metrics.ts` reads them when Prometheus scrapes. No prom-client here.
 */

export type Labels = Readonly<Record<string, string>>;

/** Request and store durations, in seconds: from 0.1 ms, since most answers take well under a millisecond. */
export const DURATION_BUCKETS: readonly number[] = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** Items per group-commit transaction. */
export const BATCH_SIZE_BUCKETS: readonly number[] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];

/** One labelled count. */
export class CountSeries {
  value = 0;

  constructor(readonly labels: Labels) {}

  add(count = 1): void {
    this.value += count;
  }
}

/** One labelled histogram: a count per bucket (not cumulative; the last is above every bound), the sum and the count. */
export class HistogramSeries {
  readonly buckets: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Labels,
    readonly bounds: readonly number[],
  ) {
    this.buckets = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let index = 0;
    while (index < bounds.length && value > bounds[index]!) index++;
    this.buckets[index]!++;
    this.sum += value;
    this.count++;
  }

  /** The cumulative counts Prometheus expects, `le` = each bound then `+Inf`. */
  cumulative(): { le: string; count: number }[] {
    let total = 0;
    const rows = this.bounds.map((bound, index) => {
      total += this.buckets[index]!;
      return { le: String(bound), count: total };
    });
    rows.push({ le: '+Inf', count: this.count });
    return rows;
  }
}

/** The methods of RFC 9110 and PATCH; any other is labelled `other`. */
export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'] as const;
const OTHER_METHOD = HTTP_METHODS.length;
const STATUS_CLASSES = 5;

function methodIndex(method: string): number {
  switch (method) {
    case 'GET':
      return 0;
    case 'HEAD':
      return 1;
    case 'POST':
      return 2;
    case 'PUT':
      return 3;
    case 'DELETE':
      return 4;
    case 'CONNECT':
      return 5;
    case 'OPTIONS':
      return 6;
    case 'TRACE':
      return 7;
    case 'PATCH':
      return 8;
    default:
      return OTHER_METHOD;
  }
}

/** `1xx` … `5xx` as 0 … 4; anything outside 100–599 counts as `5xx`. */
export function statusClassIndex(statusCode: number): number {
  const hundreds = Math.floor(statusCode / 100);
  return hundreds >= 1 && hundreds <= STATUS_CLASSES ? hundreds - 1 : STATUS_CLASSES - 1;
}

/**
 * The request durations of one route template: a histogram per method and status class, made on
 * first use, so that only combinations that happened are series. How many there can be is bounded
 * by the routes, ten methods and five classes, whatever clients send.
 */
export class RouteSeries {
  readonly #series: (HistogramSeries | undefined)[] = new Array<HistogramSeries | undefined>((OTHER_METHOD + 1) * STATUS_CLASSES);

  constructor(
    readonly route: string,
    private readonly bounds: readonly number[] = DURATION_BUCKETS,
  ) {}

  observe(method: string, statusCode: number, seconds: number): void {
    const methodAt = methodIndex(method);
    const classAt = statusClassIndex(statusCode);
    const index = methodAt * STATUS_CLASSES + classAt;
    let series = this.#series[index];
    if (series === undefined) {
      series = new HistogramSeries(
        { route: this.route, method: HTTP_METHODS[methodAt] ?? 'other', status_class: `${classAt + 1}xx` },
        this.bounds,
      );
      this.#series[index] = series;
    }
    series.observe(seconds);
  }

  *series(): Iterable<HistogramSeries> {
    for (const series of this.#series) if (series !== undefined) yield series;
  }
}
