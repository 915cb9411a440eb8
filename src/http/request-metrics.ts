import type { Registry } from 'prom-client';

/**
 * The two request metrics — `indexer_api_http_requests_total` (by method, route pattern,
 * status[, chain]) and `indexer_api_http_request_duration_seconds` (by method, route pattern[,
 * chain]) — counted in plain numbers per series, and shown to prom-client's registry as two
 * metrics whose `get()` reads them (the registry formats the MetricObjectWithValues it returns,
 * text or JSON, and the cluster's AggregatorRegistry sums them like any counter or histogram).
 *
 * Why not prom-client's Counter and Histogram: their `inc` and `observe` build and check a label
 * object and hash it on every call (≈ 0.8 µs a request measured, bench/README.md "A hundred
 * thousand wallets"), a twentieth of what Node's HTTP server needs to answer a 304 from memory.
 * Here a request is one array-slot update on a series the caller keeps.
 */

/** One (method, route, status, chain) series: a count, and the latency histogram's share of it. */
class RequestSeries {
  count = 0;
  sum = 0;
  /** observations per bucket (not cumulative), by LATENCY_BUCKETS index */
  readonly buckets: Float64Array;

  constructor(
    readonly method: string,
    readonly route: string,
    readonly status: string,
    readonly chain: string | undefined,
    private readonly bounds: readonly number[],
  ) {
    this.buckets = new Float64Array(bounds.length);
  }

  observe(seconds: number): void {
    this.count++;
    this.sum += seconds;
    const b = this.bounds;
    let i = 0;
    while (i < b.length && seconds > b[i]) i++;
    if (i < b.length) this.buckets[i]++;
  }
}

interface Value {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

/** The series and the two metrics over them, registered in `registry`. */
export class RequestMetrics {
  private readonly series = new Map<string, RequestSeries>();

  constructor(
    registry: Registry,
    private readonly labelled: boolean,
    private readonly bounds: readonly number[],
  ) {
    const counter = {
      name: 'indexer_api_http_requests_total',
      help: 'HTTP requests answered, by route pattern and status',
      type: 'counter',
      aggregator: 'sum',
      get: async () => ({ name: counter.name, help: counter.help, type: counter.type, aggregator: counter.aggregator, values: this.counts() }),
      reset: () => {
        this.series.clear();
      },
    };
    const histogram = {
      name: 'indexer_api_http_request_duration_seconds',
      help: 'Time from request to the last byte handed to the OS, by route pattern',
      type: 'histogram',
      aggregator: 'sum',
      get: async () => ({
        name: histogram.name,
        help: histogram.help,
        type: histogram.type,
        aggregator: histogram.aggregator,
        values: this.latencies(histogram.name),
      }),
      reset: () => {
        this.series.clear();
      },
    };
    // the registry reads a metric's name, help, type and get() (prom-client's Metric, structurally)
    registry.registerMetric(counter as unknown as Parameters<Registry['registerMetric']>[0]);
    registry.registerMetric(histogram as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** The series of (method, route, status[, chain]), made on first use: keep it and call observe. */
  of(method: string, route: string, status: number, chain = ''): RequestSeries {
    const key = `${method} ${status} ${route} ${this.labelled ? chain : ''}`;
    let s = this.series.get(key);
    if (s === undefined) this.series.set(key, (s = new RequestSeries(method, route, String(status), this.labelled ? chain : undefined, this.bounds)));
    return s;
  }

  private counts(): Value[] {
    const out: Value[] = [];
    for (const s of this.series.values()) {
      const labels: Record<string, string> = { method: s.method, route: s.route, status: s.status };
      if (s.chain !== undefined) labels.chain = s.chain;
      out.push({ value: s.count, labels });
    }
    return out;
  }

  /** prom-client's histogram values: cumulative buckets with `le` first, then +Inf, sum and count, per (method, route[, chain]). */
  private latencies(name: string): Value[] {
    const groups = new Map<string, { labels: Record<string, string>; buckets: Float64Array; sum: number; count: number }>();
    for (const s of this.series.values()) {
      const key = `${s.method} ${s.route} ${s.chain ?? ''}`;
      let g = groups.get(key);
      if (g === undefined) {
        const labels: Record<string, string> = { method: s.method, route: s.route };
        if (s.chain !== undefined) labels.chain = s.chain;
        groups.set(key, (g = { labels, buckets: new Float64Array(this.bounds.length), sum: 0, count: 0 }));
      }
      for (let i = 0; i < s.buckets.length; i++) g.buckets[i] += s.buckets[i];
      g.sum += s.sum;
      g.count += s.count;
    }
    const out: Value[] = [];
    for (const g of groups.values()) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += g.buckets[i];
        out.push({ value: acc, labels: { le: this.bounds[i], ...g.labels }, metricName: `${name}_bucket` });
      }
      out.push({ value: g.count, labels: { le: '+Inf', ...g.labels }, metricName: `${name}_bucket` });
      out.push({ value: g.sum, labels: { ...g.labels }, metricName: `${name}_sum` });
      out.push({ value: g.count, labels: { ...g.labels }, metricName: `${name}_count` });
    }
    return out;
  }
}
