import type { ImportProgress } from './from-dump';

/** Progress on a terminal: one rewritten line per stage with rows, rows/s; silent otherwise. */
export class Progress implements ImportProgress {
  private name = '';
  private rows = 0;
  private started = Date.now();
  private last = 0;

  constructor(private readonly enabled: boolean) {}

  stage(name: string): void {
    this.finishLine();
    this.name = name;
    this.rows = 0;
    this.started = Date.now();
    this.render(true);
  }

  records(n: number): void {
    this.rows += n;
    this.render(false);
  }

  done(): void {
    this.finishLine();
  }

  private finishLine(): void {
    if (this.enabled && this.name) { this.render(true); process.stderr.write('\n'); }
    this.name = '';
  }

  private render(force: boolean): void {
    if (!this.enabled || !this.name) return;
    const now = Date.now();
    if (!force && now - this.last < 200) return;
    this.last = now;
    const secs = Math.max((now - this.started) / 1000, 0.001);
    const rate = Math.round(this.rows / secs);
    process.stderr.write(`\r\x1b[K  ${this.name.padEnd(16)} ${String(this.rows).padStart(10)} rows  ${String(rate).padStart(8)} rows/s  ${secs.toFixed(1)} s`);
  }
}
