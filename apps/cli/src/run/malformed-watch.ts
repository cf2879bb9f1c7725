import type { Logger } from "pino";
import { Gauge, type Registry } from "prom-client";

/**
 * Share of malformed input above which the sidecar is not ready. A few damaged records are normal
 * (a server crashing mid-line); a wrong --prefix or --format makes nearly every record malformed,
 * and syslog cannot be read again later: that must page someone, not scroll by as warnings.
 */
export const MALFORMED_RATIO_LIMIT = 0.05;
/** Fewer malformed records than this in a window never fail readiness. */
export const MALFORMED_MIN_COUNT = 10;
/** Malformed input is logged as one summary per window, never one line per record. */
export const MALFORMED_WINDOW_MS = 10_000;

/**
 * Watches the malformed share of what the sources read: logs one summary per window (error when
 * over the limit), exports it as metrics and gives /readyz a reason while it is too high. The
 * reason stays until a window with enough records is back under the limit.
 */
export class MalformedWatch {
  private records = 0;
  private malformedCount = 0;
  private readonly codes = new Map<string, number>();
  private first: { source: string; offset: number | undefined } | undefined;
  private alarm: string | undefined;
  private readonly ratioGauge: Gauge;
  private readonly highGauge: Gauge;

  private readonly logger: Logger;

  constructor(registry: Registry, logger: Logger) {
    this.logger = logger;
    this.ratioGauge = new Gauge({
      name: "auditpipe_malformed_ratio",
      help: "Share of the records read in the last window (10 s) that were malformed.",
      registers: [registry],
    });
    this.highGauge = new Gauge({
      name: "auditpipe_malformed_rate_high",
      help: `1 while more than ${MALFORMED_RATIO_LIMIT * 100}% of the input is malformed (wrong --prefix or --format?); /readyz fails meanwhile.`,
      registers: [registry],
    });
    this.highGauge.set(0);
    this.ratioGauge.set(0);
  }

  read(count: number): void {
    this.records += count;
  }

  malformed(source: string, code: string, offset?: number): void {
    this.malformedCount++;
    this.codes.set(code, (this.codes.get(code) ?? 0) + 1);
    this.first ??= { source, offset };
    if (this.alarm === undefined && this.overLimit()) this.raise();
  }

  /** Why /readyz fails, while too much input is malformed. */
  reason(): string | undefined {
    return this.alarm;
  }

  /** Ends a window: one summary line, the gauges, the alarm raised or cleared. */
  tick(): void {
    const total = this.records + this.malformedCount;
    const ratio = total > 0 ? this.malformedCount / total : 0;
    this.ratioGauge.set(ratio);
    const over = this.overLimit();
    if (over && this.alarm === undefined) this.raise();
    else if (!over && total >= MALFORMED_MIN_COUNT) {
      this.alarm = undefined;
      this.highGauge.set(0);
    }
    if (this.malformedCount > 0) {
      const summary = {
        malformed: this.malformedCount,
        records: this.records,
        ratio: Number(ratio.toFixed(4)),
        codes: Object.fromEntries(this.codes),
        first: this.first,
        windowMs: MALFORMED_WINDOW_MS,
      };
      if (over)
        this.logger.error(summary, "most input is malformed and skipped: check --prefix and --format");
      else this.logger.warn(summary, "malformed records skipped");
    }
    this.records = 0;
    this.malformedCount = 0;
    this.codes.clear();
    this.first = undefined;
  }

  private overLimit(): boolean {
    const total = this.records + this.malformedCount;
    return this.malformedCount >= MALFORMED_MIN_COUNT && this.malformedCount / total > MALFORMED_RATIO_LIMIT;
  }

  private raise(): void {
    const total = this.records + this.malformedCount;
    const codes = [...this.codes.keys()].join(", ");
    this.alarm = `${this.malformedCount} of ${total} records just read are malformed (${codes}) and skipped: check --prefix (SHOW log_line_prefix) and --format`;
    this.highGauge.set(1);
  }
}
