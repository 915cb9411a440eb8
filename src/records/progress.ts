import type { ImportProgress } from './from-dump';

/**
 * Import progress on a terminal: one line per stage, rewritten at most 5 times a second, with
 * rows, rows/s, elapsed and, when the source knows how many rows to expect, percent and ETA.
 * Finished stages stay on screen. Disabled (no output at all) when not on a TTY or with --quiet.
 */
export class StageProgress implements ImportProgress {
  private name = '';
  private rows = 0;
  private started = 0;
  private last = 0;
  private total: number | undefined;
  /** rows of the stage an earlier run left (a resumed crawl): counted in the percentage, not in the rate */
  protected carried = 0;
  readonly stages: { name: string; rows: number; seconds: number }[] = [];

  constructor(
    private readonly enabled: boolean,
    private readonly totals: (stage: string) => number | undefined = () => undefined,
    private readonly out: NodeJS.WriteStream = process.stderr,
  ) {}

  stage(name: string): void {
    this.finishStage();
    this.name = name;
    this.rows = 0;
    this.started = Date.now();
    this.total = this.totals(name);
    this.carried = 0;
    this.render(true);
  }

  expect(total: number, carried: number): void {
    this.total = total;
    this.carried = carried;
    this.render(true);
  }

  /** The stage's percentage and seconds left, when its size is known and rows came (ETA from this run's rate). */
  protected eta(): { pct: number; eta: number } | undefined {
    if (this.total === undefined || this.total <= 0 || this.rows === 0) return undefined;
    const secs = Math.max((Date.now() - this.started) / 1000, 0.001);
    const done = this.carried + this.rows;
    const rate = this.rows / secs;
    return { pct: Math.min(100, (100 * done) / this.total), eta: rate > 0 && done < this.total ? (this.total - done) / rate : 0 };
  }

  records(n: number): void {
    this.rows += n;
    this.render(false);
  }

  done(): void {
    this.finishStage();
  }

  private finishStage(): void {
    if (!this.name) return;
    this.stages.push({ name: this.name, rows: this.rows, seconds: (Date.now() - this.started) / 1000 });
    if (this.enabled) {
      this.render(true, true);
      this.out.write('\n');
    }
    this.name = '';
  }

  private render(force: boolean, final = false): void {
    if (!this.enabled || !this.name) return;
    const now = Date.now();
    if (!force && now - this.last < 200) return;
    this.last = now;
    const secs = Math.max((now - this.started) / 1000, 0.001);
    const rate = this.rows / secs;
    // Steps without rows (index, count, check) show only their time.
    let line =
      this.rows === 0 && this.total === undefined
        ? `  ${this.name.padEnd(16)} ${''.padStart(10)}       ${''.padStart(9)}         ${fmtSecs(secs).padStart(7)}`
        : `  ${this.name.padEnd(16)} ${String(this.rows).padStart(10)} rows  ${fmtRate(rate).padStart(9)} rows/s  ${fmtSecs(secs).padStart(7)}`;
    const left = final ? undefined : this.eta();
    if (left !== undefined) line += `  ${left.pct.toFixed(1).padStart(5)}%  ETA ${fmtSecs(left.eta)}`;
    if (this.carried > 0) line += `  (${this.carried} carried over)`;
    this.out.write(`\r\x1b[K${line}`);
  }
}

function fmtRate(r: number): string {
  return r >= 1e6 ? `${(r / 1e6).toFixed(2)}M` : r >= 1e4 ? `${(r / 1e3).toFixed(1)}k` : String(Math.round(r));
}

function fmtSecs(s: number): string {
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m${String(Math.round(s % 60)).padStart(2, '0')}s` : `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}
