import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { benchReportSchema, calibrationSchema } from "@auditpipe/overhead";
import { waitUntil } from "@auditpipe/testkit";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./_cli.ts";
import { spawnCli } from "./_sidecar.ts";

/** Debian's chromium (scripts/setup.sh installs it); playwright-core never downloads a browser. */
const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
];
/** Set to a path (docs/bench-report.png) to keep the screenshot of this run's report for the docs. */
const SCREENSHOT_OUT = process.env.BENCH_REPORT_SCREENSHOT;

/** What the page's Chart.js instance laid out and painted on one canvas. */
interface DrawnChart {
  width: number;
  height: number;
  /** Pixels painted in each dataset's colour (bar interiors). */
  datasetPixels: number[];
  /** Each dataset's values, to know which must show a bar. */
  datasetValues: number[][];
  xLabels: string[];
  xTitle: string;
  yTitle: string;
  legend: string[];
  /** Pixel ends of each error bar (overhead chart), from the error-bar elements drawn. */
  errorBars: Array<[number, number]>;
}

/** What the test reads of the page's globals (this workspace compiles without the DOM's types). */
interface PageCanvas {
  id: string;
  width: number;
  height: number;
  getContext(kind: "2d"): {
    getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray };
  };
}
interface PageGlobals {
  document: {
    documentElement: { hasAttribute(name: string): boolean };
    querySelectorAll(selector: "canvas"): Iterable<PageCanvas>;
    getElementById(id: string): { getBoundingClientRect(): { bottom: number } };
  };
  scrollY: number;
  Chart: { getChart(canvas: PageCanvas): PageChart };
}

/** The parts of a Chart.js instance (the page's global `Chart`) that the test reads. */
interface PageChart {
  data: { datasets: Array<{ backgroundColor: string; data: unknown[] }> };
  scales: { x: { ticks: Array<{ value: number }>; getLabelForValue(value: number): unknown } };
  options: { scales: { x: { title: { text: string } }; y: { title: { text: string } } } };
  legend: { legendItems: Array<{ text: string }> };
  getDatasetMeta(index: number): { data: Array<{ yMin?: number; yMax?: number }> };
}

/** What the page's Chart.js instances laid out and painted, one per canvas. */
async function drawnCharts(page: Page): Promise<Array<DrawnChart & { id: string }>> {
  return page.evaluate(() => {
    const { document, Chart } = globalThis as unknown as PageGlobals;
    return [...document.querySelectorAll("canvas")].map((canvas) => {
      const chart = Chart.getChart(canvas);
      const ctx = canvas.getContext("2d");
      const pixels = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      const rgb = (hex: string): number[] => [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
      const datasets = chart.data.datasets;
      const colours = datasets.map((d) => rgb(d.backgroundColor));
      const datasetPixels = colours.map(() => 0);
      for (let p = 0; p < pixels.length; p += 4) {
        if (pixels[p + 3] !== 255) continue;
        colours.forEach(([r, g, b], i) => {
          if (pixels[p] === r && pixels[p + 1] === g && pixels[p + 2] === b) datasetPixels[i]!++;
        });
      }
      const x = chart.scales.x;
      const bars = chart.getDatasetMeta(0).data;
      return {
        id: canvas.id,
        width: canvas.width,
        height: canvas.height,
        datasetPixels,
        datasetValues: datasets.map((d) =>
          d.data.map((v) => (typeof v === "number" ? v : ((v as { y?: number } | null)?.y ?? 0))),
        ),
        xLabels: x.ticks.map((t) => String(x.getLabelForValue(t.value))),
        xTitle: chart.options.scales.x.title.text,
        yTitle: chart.options.scales.y.title.text,
        legend: chart.legend.legendItems.map((i) => i.text),
        errorBars: bars
          .filter((b) => b.yMin !== undefined)
          .map((b) => [Number(b.yMin), Number(b.yMax)] as [number, number]),
      };
    });
  });
}

/** Opens a report file with every other request refused and recorded; resolves once it drew its charts. */
async function openReport(browser: Browser, file: string) {
  const context = await browser.newContext({
    viewport: { width: 1200, height: 900 },
    deviceScaleFactor: 1,
  });
  const attempted: string[] = [];
  // Anything but the file itself is recorded and refused: the page must need nothing else.
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith("file:")) return route.continue();
    attempted.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  const requested: string[] = [];
  const problems: string[] = [];
  page.on("request", (r) => requested.push(r.url()));
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`);
  });
  const url = pathToFileURL(file).href;
  await page.goto(url);
  await page.waitForFunction(() =>
    (globalThis as unknown as PageGlobals).document.documentElement.hasAttribute("data-ready"),
  );
  expect(await page.getAttribute("html", "data-error")).toBeNull();
  expect(await page.getAttribute("html", "data-ready")).toBe("true");

  return { context, page, url, attempted, requested, problems };
}

/** The outputs of one real `bench --quick`, shortened: the first two tests check them. */
interface QuickBench {
  code: number;
  stdout: string;
  stderr: string;
  reportFile: string;
  calibrationFile: string;
}

describe("bench --report on a real scratch server, opened in headless Chromium", () => {
  let work: string;
  let browser: Browser;
  let quick: QuickBench;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (scripts/setup.sh does it)`);
    work = mkdtempSync(join(tmpdir(), "auditpipe-bench-report-"));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    // The smallest real bench, run once for its JSON, its calibration file and its report (each
    // bench is most of a minute on CI): --quick's matrix (none, read, write, all, log_statement ×
    // tpcb, then none and all at 8 clients) with short runs.
    const reportFile = join(work, "bench <report>.html");
    const calibrationFile = join(work, "calibration.json");
    const result = await runCli([
      "bench",
      "--quick",
      "--json",
      "--runs",
      "2",
      "--duration",
      "1",
      "--warmup",
      "1",
      "--scale",
      "1",
      "--calibration-out",
      calibrationFile,
      "--report",
      reportFile,
    ]);
    quick = { ...result, reportFile, calibrationFile };
  }, 240_000);
  afterAll(async () => {
    await browser?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("completes, and its JSON matches the schema with real measurements in every run", () => {
    const { code, stdout, stderr, calibrationFile } = quick;
    expect(stderr).toMatch(/about \d+(\.5)? min|under a minute/); // the planned duration, printed before it starts
    expect(code, stderr).toBe(0);
    const report = benchReportSchema.parse(JSON.parse(stdout));
    expect(report.complete).toBe(true);
    expect(report.target).toEqual({ kind: "scratch", baseline: "pgaudit-not-loaded" });
    expect(report.environment.postgres.versionNum).toBeGreaterThanOrEqual(150_000);
    expect(report.environment.pgaudit).toMatch(/^1\./);
    // As it was started here (invocation.ts: `auditpipe`, or `pnpm exec auditpipe` under pnpm exec).
    expect(report.command).toMatch(/(?:^| )auditpipe bench --quick --json/);
    expect(report.configurations.map((c) => c.name)).toEqual([
      "none",
      "read",
      "write",
      "all",
      "log_statement",
    ]);
    expect(report.runs).toHaveLength(24);
    expect(report.workloads.map((w) => [w.name, w.clients, w.rate])).toEqual([
      ["tpcb", undefined, undefined],
      ["read-heavy", undefined, undefined],
      ["tpcb@8", 8, undefined],
      ["tpcb@300tps", 2, 300],
    ]);
    for (const rated of ["tpcb@8", "tpcb@300tps"])
      expect(
        report.runs
          .filter((r) => r.workload === rated)
          .map((r) => r.configuration)
          .sort(),
      ).toEqual(["all", "all", "none", "none"]);
    // pgbench -R holds the low-rate cell near its 300 TPS (it lags on a busy machine, never exceeds it much).
    for (const run of report.runs.filter((r) => r.workload === "tpcb@300tps"))
      expect(run.tps).toBeLessThan(360);
    // Interleaved: never the same configuration twice in a row.
    for (let i = 1; i < report.runs.length; i++)
      expect(report.runs[i]!.configuration).not.toBe(report.runs[i - 1]!.configuration);
    for (const run of report.runs) {
      expect(run.tps).toBeGreaterThan(0);
      expect(run.transactions).toBeGreaterThan(0);
      expect(run.walBytes).toBeGreaterThan(0);
      expect(run.latencyMs.p50).toBeGreaterThan(0);
      expect(run.latencyMs.p99).toBeGreaterThanOrEqual(run.latencyMs.p50);
      expect(run.log.malformed).toBe(0);
      expect(run.statWal.wal_bytes).toBeGreaterThan(0);
      const perTxn = run.log.auditEntries / run.transactions;
      if (run.configuration === "none") expect(run.log.auditEntries).toBe(0);
      // TPC-B-like (--quick: with foreign keys): 3 UPDATEs and 1 INSERT are WRITE; the SELECT is
      // READ, and so are the INSERT's 3 key checks (nested); 'all' adds BEGIN and END.
      // read-heavy: 9 SELECTs and 1 UPDATE (no key changes: no check); 'all' adds BEGIN and END.
      const heavy = run.workload === "read-heavy";
      const kinds = run.log.auditKinds!;
      if (run.configuration === "read") expect(perTxn).toBeCloseTo(4, 0);
      if (run.configuration === "write") expect(perTxn).toBeCloseTo(heavy ? 1 : 4, 0);
      if (run.configuration === "all") expect(perTxn).toBeCloseTo(heavy ? 12 : 10, 0);
      if (run.configuration === "all") expect(kinds.misc / run.transactions).toBeCloseTo(2, 0);
      if (run.configuration === "read" || (run.configuration === "all" && !heavy))
        expect(kinds.nested / run.transactions).toBeCloseTo(3, 0);
      if (run.configuration === "write") expect(kinds.nested).toBe(0);
      if (run.configuration === "log_statement") {
        expect(run.log.auditEntries).toBe(0);
        expect(run.log.records / run.transactions).toBeCloseTo(7, 0);
      }
    }
    expect(report.cells).toHaveLength(12);
    // The collector's wake-ups are counted in every run (its voluntary context switches).
    for (const run of report.runs) expect(run.cpu?.loggerWakeups).toBeGreaterThanOrEqual(0);
    const all = report.cells.find((c) => c.configuration === "all")!;
    expect(all.overhead).not.toBeNull();
    expect(all.overhead!.low).toBeLessThanOrEqual(all.overhead!.median);
    expect(all.overhead!.high).toBeGreaterThanOrEqual(all.overhead!.median);
    expect(all.gbPerDay).toBeGreaterThan(0);
    expect(report.cells.find((c) => c.configuration === "none")!.overhead).toBeNull();
    expect(report.calibration).not.toBeNull();
    const calibration = calibrationSchema.parse(JSON.parse(readFileSync(calibrationFile, "utf8")));
    expect(calibration.points.map((p) => p.configuration)).toEqual([
      "read",
      "write",
      "all",
      "log_statement",
      "write",
      "all",
      "all",
      "all",
    ]);
    // Lines by kind in every point: the MISC ones priced apart (version 5).
    expect(calibration.points.map((p) => Math.round(p.linesByKind?.misc ?? -1))).toEqual([
      0, 0, 2, 0, 0, 2, 2, 2,
    ]);
    // TPC-B's history rows check 3 keys (--quick's --foreign-keys): nested under read and all.
    expect(calibration.points.map((p) => Math.round(p.linesByKind?.nested ?? -1))).toEqual([
      3, 0, 3, 0, 0, 0, 3, 3,
    ]);
    expect(report.options.foreignKeys).toBe(true);
    expect(calibration.points.at(-2)).toMatchObject({ workload: "tpcb@8", clients: 8 });
    expect(calibration.points.at(-1)).toMatchObject({ workload: "tpcb@300tps", clients: 2, rate: 300 });
    // The collector fitted apart, from every run's collector CPU, line rate and wake-ups; and
    // version 4, the backends' cost per wake-up as a column, where the low-rate cell sets it
    // apart from the lines (with a fitted τ near 0, one wake-up per line at every rate, it cannot).
    const wakeups = calibration.fit.cpu?.columns.includes("wakeups") === true;
    expect(calibration.version).toBe(
      calibration.fit.cpu?.columns.includes("miscLines") ? 5 : wakeups ? 4 : 3,
    );
    const collector = calibration.fit.cpu?.collector;
    expect(collector).toBeDefined();
    expect(collector!.wakeupUs.estimate).toBeGreaterThanOrEqual(0);
    expect(collector!.lineUs.estimate).toBeGreaterThanOrEqual(0);
    expect(collector!.awakeUs).toBeGreaterThanOrEqual(0);
    for (const p of calibration.points) {
      expect(p.loggerSamples).toHaveLength(2);
      expect(p.wakeupSamples).toHaveLength(2);
      expect(p.linesPerSecSamples!.every((r) => r > 0)).toBe(true);
    }
    expect(calibration.host).toBe(report.environment.host);
  });

  it("draws and labels every chart offline, with the environment and the command that reproduces it", async () => {
    const { code, stdout, stderr, reportFile } = quick;
    expect(code, stderr).toBe(0);
    expect(stderr).toContain(`bench: report written to ${reportFile}`);
    const report = benchReportSchema.parse(JSON.parse(stdout));
    const configurations = report.configurations.map((c) => c.name);
    expect(configurations).toEqual(["none", "read", "write", "all", "log_statement"]);

    const { context, page, url, attempted, requested, problems } = await openReport(browser, reportFile);
    const charts = await drawnCharts(page);
    const byId = Object.fromEntries(charts.map((c) => [c.id, c]));
    expect(Object.keys(byId)).toEqual(["chart-overhead", "chart-latency", "chart-bytes"]);

    for (const chart of charts) {
      expect(chart.width, chart.id).toBeGreaterThan(300);
      expect(chart.height, chart.id).toBeGreaterThan(200);
      expect(chart.xTitle, chart.id).toBe("configuration");
      expect(chart.yTitle.length, chart.id).toBeGreaterThan(0);
      // Every dataset with a non-zero value has its bars painted on the canvas.
      chart.datasetValues.forEach((values, i) => {
        if (values.some((v) => v !== 0))
          expect(chart.datasetPixels[i], `${chart.id} #${i}`).toBeGreaterThan(50);
      });
    }
    const overhead = byId["chart-overhead"]!;
    expect(overhead.xLabels).toEqual(configurations.slice(1)); // the baseline has no overhead
    // read-heavy's bars beside TPC-B's where it ran (write and all; an empty point elsewhere).
    expect(overhead.legend).toEqual(["tpcb", "read-heavy"]);
    expect(overhead.yTitle).toContain("overhead");
    // One error bar per configuration, spanning the interval the report gives (pixel y grows downwards).
    expect(overhead.errorBars).toHaveLength(configurations.length - 1);
    // The charts leave out --quick's rate cells (tpcb@8): they are for the calibration.
    report.cells
      .filter((c) => c.overhead && c.workload === "tpcb")
      .forEach((c, i) => {
        const [yMin, yMax] = overhead.errorBars[i]!;
        expect(Number.isFinite(yMin) && Number.isFinite(yMax)).toBe(true);
        if (c.overhead!.high - c.overhead!.low > 0.001) expect(yMin).toBeGreaterThan(yMax);
      });
    const latency = byId["chart-latency"]!;
    // One bar group per cell, named with its workload where there are two (rate cells left out).
    const cellLabels = configurations.flatMap((c) =>
      ["tpcb", "read-heavy"]
        .filter((w) => report.cells.some((x) => x.configuration === c && x.workload === w))
        .map((w) => `${c} · ${w}`),
    );
    expect(latency.xLabels).toEqual(cellLabels);
    expect(latency.legend).toEqual(["p50", "p95", "p99"]);
    expect(latency.yTitle).toContain("latency");
    const bytes = byId["chart-bytes"]!;
    expect(bytes.xLabels).toEqual(cellLabels);
    expect(bytes.legend).toEqual(["server log bytes", "WAL bytes"]);

    // Each chart's text alternative names the configurations too.
    for (const id of ["chart-latency", "chart-bytes"]) {
      const text = await page.locator(`#${id}`).textContent();
      for (const name of configurations) expect(text, id).toContain(name);
    }
    const environment = (await page.locator("#environment").textContent()) ?? "";
    expect(environment).toContain(report.environment.postgres.version);
    expect(environment).toContain(`pgaudit${report.environment.pgaudit}`);
    expect(environment).toContain(report.environment.dataDirectory.path);
    expect(environment).toContain(report.environment.logDirectory.path);
    expect(environment).toContain(`${report.environment.cpus.count} × `);
    for (const setting of Object.keys(report.environment.settings)) expect(environment).toContain(setting);
    expect(await page.locator("#reproduce-command").textContent()).toBe(report.command);
    expect(report.command).toContain("--report");
    expect(await page.locator("#significance").textContent()).toMatch(
      /calibration in server CPU time: backends: per log line .*; the logging collector: .* per wake-up and .* per line/,
    );
    const unresolved = report.cells.filter((c) => c.overhead && !c.overhead.significant);
    if (unresolved.length > 0)
      expect(await page.locator("#significance").textContent()).toContain(
        "not significant at this sample size",
      );

    expect(attempted).toEqual([]);
    expect(requested).toEqual([url]);
    expect(problems).toEqual([]);

    // The charts, notes and table: the picture docs/bench.md shows.
    const bottom = await page.evaluate(() => {
      const { document, scrollY } = globalThis as unknown as PageGlobals;
      return Math.ceil(document.getElementById("results").getBoundingClientRect().bottom + scrollY + 16);
    });
    const png = await page.screenshot({ fullPage: true, clip: { x: 0, y: 0, width: 1200, height: bottom } });
    expect(png.subarray(1, 4).toString()).toBe("PNG");
    expect(png.readUInt32BE(16)).toBe(1200);
    if (SCREENSHOT_OUT) writeFileSync(SCREENSHOT_OUT, png);
    expect(readFileSync(reportFile, "utf8")).toContain("<!doctype html>");
    await context.close();
  });

  it("is written after Ctrl-C too, marked incomplete, with the runs measured until then; pgbench stopped, the JSON reports those runs, exit 130", async () => {
    const reportFile = join(work, "interrupted.html");
    const child = spawnCli([
      "bench",
      "--quick",
      "--json",
      "--runs",
      "2",
      "--duration",
      "1",
      "--warmup",
      "1",
      "--scale",
      "1",
      "--report",
      reportFile,
    ]);
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    // Run 4 starting means the warm-up, none and read have been measured.
    await waitUntil(
      () => /run 4\/\d+/.test(stderr) || child.exitCode !== null,
      120_000,
      () => `bench did not reach run 4:\n${stderr}`,
    );
    child.kill("SIGINT");
    expect(await exited, stderr).toBe(130);
    expect(stderr).toContain("stopping after Ctrl-C");
    expect(stderr).toContain(`bench: report written to ${reportFile}`);
    const report = benchReportSchema.parse(JSON.parse(stdout));
    expect(report.complete).toBe(false);
    expect(report.interruption).toMatch(/Ctrl-C/);
    expect(report.runs.length).toBeGreaterThanOrEqual(2);
    expect(report.runs.length).toBeLessThan(14); // --quick's 14 runs
    for (const run of report.runs) expect(run.transactions).toBeGreaterThan(0);

    const { context, page, attempted, problems } = await openReport(browser, reportFile);
    expect(await page.locator("#incomplete").textContent()).toContain("Incomplete: interrupted (Ctrl-C).");
    const measured = Number(
      /(\d+) runs, in the order they ran/.exec((await page.locator("#runs").textContent()) ?? "")?.[1],
    );
    expect(measured).toBeGreaterThanOrEqual(2);
    const latency = (await drawnCharts(page)).find((c) => c.id === "chart-latency")!;
    expect(latency.xLabels.slice(0, 2)).toEqual(["none", "read"]);
    expect(attempted).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
