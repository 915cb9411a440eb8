/**
 * Import progress where nobody watches a terminal (systemd, CI, a pipe): StageProgress draws
 * only on a TTY, so a long import printed nothing until it ended. Off a terminal this logs a
 * line every `everyMs` while a stage runs (its rows, rows/s and seconds so far), so a short
 * import still prints only its result. A step that holds the thread (an index build, the
 * check) is reported when it ends, by the next line.
 */
import type { Logger } from '../lib/log';
import { StageProgress } from '../records/progress';

export class ProgressLines extends StageProgress {
  private lineStage = '';
  private lineRows = 0;
  private lineSince = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly everyMs: number,
    totals: (stage: string) => number | undefined,
  ) {
    super(false, totals);
  }

  override stage(name: string): void {
    this.endLine();
    super.stage(name);
    this.lineStage = name;
    this.lineRows = 0;
    this.lineSince = Date.now();
    this.timer = setInterval(() => this.logger.info(`import: ${this.lineStage}`, this.figures()), this.everyMs);
    this.timer.unref();
  }

  override records(n: number): void {
    super.records(n);
    this.lineRows += n;
  }

  override done(): void {
    this.endLine();
    super.done();
  }

  private endLine(): void {
    if (this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
    this.lineStage = '';
  }

  private figures(): Record<string, number> {
    const seconds = (Date.now() - this.lineSince) / 1000;
    const left = this.eta();
    // a resumed crawl's stage: the rows an earlier run staged, the share done, the seconds left
    const more = {
      ...(this.carried > 0 ? { carried_over: this.carried } : {}),
      ...(left ? { percent: Number(left.pct.toFixed(1)), eta_s: Math.round(left.eta) } : {}),
    };
    return this.lineRows === 0
      ? { seconds: Number(seconds.toFixed(1)), ...more }
      : { rows: this.lineRows, rows_per_s: Math.round(this.lineRows / Math.max(seconds, 0.001)), seconds: Number(seconds.toFixed(1)), ...more };
  }
}
