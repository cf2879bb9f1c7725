/**
 * A bench calibration reaches every place an overhead range is given, not only `estimate`:
 * `serve --calibration` (and AUDITPIPE_CALIBRATION) over HTTP, and `run --db` — its workload
 * sampler's log and the estimate routes it serves — against a real PostgreSQL under pgbench load.
 * Without one, each says the range is uncalibrated and cites the public sources by title and author.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPostgres, waitUntil } from "@auditpipe/testkit";
import { afterAll, describe, expect, it } from "vitest";
import {
  CALIBRATED_ON,
  CALIBRATION,
  PLANNED_WORKLOAD as WORKLOAD,
  writeCalibration,
} from "./_calibration.ts";
import { type SidecarProcess, spawnServer, spawnSidecar } from "./_sidecar.ts";

const work = mkdtempSync(join(tmpdir(), "auditpipe-calibration-everywhere-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const calibrationFile = writeCalibration(work);

interface EstimatesAnswer {
  overheadBasis: string;
  calibration: { host: string; createdAt: string; r2: number | null } | null;
  estimates: Array<{
    config: string;
    overhead: {
      throughput: { low: number; high: number };
      addedCpuUs: { low: number; estimate: number; high: number };
      assumptions: string[];
    };
  }>;
}

async function postEstimates(url: string, body: unknown): Promise<{ status: number; json: EstimatesAnswer }> {
  const response = await fetch(`${url}/v1/estimates`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as EstimatesAnswer };
}

/** `serve` as a real process. A PGHOST where nothing listens: no sample, no calibration from the environment. */
function spawnServe(args: string[], env: NodeJS.ProcessEnv = {}): SidecarProcess {
  return spawnServer(["serve", "--listen", "127.0.0.1:0", ...args], {
    PGHOST: join(work, "no-server"),
    AUDITPIPE_CALIBRATION: "",
    ...env,
  });
}

async function stop(p: SidecarProcess): Promise<void> {
  if (p.child.exitCode === null) p.child.kill("SIGTERM");
  await p.exited;
}

describe("serve with a calibration", () => {
  it("--calibration: the estimate route's ranges are calibrated and say on which host and date", async () => {
    const serve = spawnServe(["--calibration", calibrationFile]);
    try {
      const url = await serve.url();
      const { status, json } = await postEstimates(url, { workload: WORKLOAD, configs: ["write"] });
      expect(status).toBe(200);
      expect(json.overheadBasis).toBe(CALIBRATED_ON);
      expect(json.calibration).toMatchObject({
        host: "benchhost",
        createdAt: CALIBRATION.createdAt,
        r2: 0.9,
      });
      const write = json.estimates[0]!;
      expect(write.overhead.assumptions[0]).toBe(CALIBRATED_ON);
      // One WRITE entry per transaction at 8–12 µs on 2,000 µs per transaction per client.
      expect(write.overhead.addedCpuUs).toEqual({ low: 8, estimate: 10, high: 12 });
      expect(write.overhead.throughput.low).toBeCloseTo(8 / 2008, 6);
      expect(serve.stderr()).toContain(`"overheadBasis":"${CALIBRATED_ON}"`);
    } finally {
      await stop(serve);
    }
  });

  it("takes AUDITPIPE_CALIBRATION; without either says uncalibrated and cites the public sources", async () => {
    const fromEnv = spawnServe([], { AUDITPIPE_CALIBRATION: calibrationFile });
    const without = spawnServe([]);
    try {
      const calibrated = await postEstimates(await fromEnv.url(), { workload: WORKLOAD, configs: ["write"] });
      expect(calibrated.json.overheadBasis).toBe(CALIBRATED_ON);
      const plain = await postEstimates(await without.url(), { workload: WORKLOAD, configs: ["write"] });
      expect(plain.status).toBe(200);
      expect(plain.json.calibration).toBeNull();
      expect(plain.json.overheadBasis).toMatch(/^uncalibrated/);
      expect(plain.json.overheadBasis).toContain(
        'Gold Lapel, "pgAudit Performance Impact: Benchmarks and Mitigation Strategies"',
      );
      expect(plain.json.overheadBasis).toContain("digoal");
      expect(plain.json.estimates[0]!.overhead.assumptions[0]).toBe(plain.json.overheadBasis);
      expect(without.stderr()).toContain("overhead ranges uncalibrated");
    } finally {
      await Promise.all([stop(fromEnv), stop(without)]);
    }
  });

  it("refuses a file that is not a calibration before listening, naming the field", async () => {
    const bad = writeCalibration(work, "not-a-calibration.json", { ...CALIBRATION, host: 7 });
    const serve = spawnServe(["--calibration", bad]);
    const { code } = await serve.exited;
    expect(code).toBe(1);
    expect(serve.stderr()).toContain("AUDITPIPE_ERR_BAD_CALIBRATION");
    expect(serve.stderr()).toContain(`--calibration ${bad}`);
    expect(serve.stderr()).toContain("host:");
    expect(serve.stderr()).not.toContain('"url"');
  });
});

describe("run --db with a calibration", () => {
  it("the sampler logs the current configuration's calibrated range, and the routes return it", async () => {
    const pg = await startPostgres({ preloadLibraries: ["pg_stat_statements"], pgaudit: { log: "write" } });
    const dir = join(work, "run");
    mkdirSync(dir, { recursive: true });
    let sidecar: SidecarProcess | undefined;
    let loading = true;
    let load: Promise<void> = Promise.resolve();
    try {
      await pg.query("CREATE EXTENSION pg_stat_statements");
      await pg.pgbench(["-i", "-s", "1", "-q"]);
      sidecar = spawnSidecar(
        [
          ...["--log-dir", pg.logDir, "--format", "csvlog", "--from", "end"],
          ...["--state", join(dir, "state"), "--sink", join(dir, "sink"), "--listen", "127.0.0.1:0"],
          ...["--db", pg.connectionString, "--sample-interval-ms", "1000"],
        ],
        { AUDITPIPE_CALIBRATION: calibrationFile },
      );
      const url = await sidecar.url();
      // Light load, in short runs, until a sample has seen it (however slow the machine is).
      load = (async () => {
        while (loading) await pg.pgbench(["-n", "-c", "1", "-T", "1", "-R", "200"]);
      })();
      const sampled = (): Array<{
        overhead?: { configuration: string; throughput: string; regime: string; basis: string };
      }> =>
        sidecar!
          .stderr()
          .split("\n")
          .filter((l) => l.includes('"workload sampled"'))
          .map((l) => JSON.parse(l));
      // Under load, with the clients seen: a sample between two pgbench runs may see none
      // (its regime is then honestly "unknown").
      const underLoad = (s: ReturnType<typeof sampled>[number]): boolean =>
        !!s.overhead && s.overhead.throughput !== "0.0%" && s.overhead.regime !== "unknown";
      await waitUntil(
        () => sampled().some(underLoad),
        60_000,
        () => `no sample under load:\n${sidecar!.stderr()}`,
        200,
      );
      const loaded = sampled().find(underLoad)!.overhead!;
      expect(loaded.basis).toBe(CALIBRATED_ON);
      expect(loaded.configuration).toBe("current"); // the server's own pgaudit.log = 'write'
      expect(loaded.throughput).toMatch(/^\d+\.\d% \[\d+\.\d%–\d+\.\d%\]$/);
      expect(loaded.regime).toMatch(/^(cpu-bound|latency-bound|between)$/);
      expect(sidecar.stderr()).not.toContain("-0.0%");
      expect(sidecar.stderr()).toContain(`overhead ranges ${CALIBRATED_ON}`);

      // From the sample: the server's current configuration first, calibrated while under load.
      let answer: EstimatesAnswer | undefined;
      await waitUntil(
        async () => {
          const r = await postEstimates(url, { configs: ["all"] });
          answer = r.json;
          return (
            r.status === 200 && r.json.estimates.every((e) => e.overhead.assumptions[0] === CALIBRATED_ON)
          );
        },
        30_000,
        () => `no calibrated estimate from the sample: ${JSON.stringify(answer)}`,
        250,
      );
      expect(answer!.overheadBasis).toBe(CALIBRATED_ON);
      expect(answer!.estimates.map((e) => e.config)).toEqual(["current", "all"]);
      expect(answer!.estimates[1]!.overhead.throughput.high).toBeGreaterThan(0);
      const rec = (await (
        await fetch(`${url}/v1/recommendations`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ sensitive: ["pgbench_accounts"] }),
        })
      ).json()) as { after: { overhead: { assumptions: string[] } } };
      expect(rec.after.overhead.assumptions[0]).toBe(CALIBRATED_ON);
    } finally {
      loading = false;
      await load.catch(() => {});
      if (sidecar) await stop(sidecar);
      await pg.stop();
    }
  });

  it("a bad calibration named by a config file stops the start with the key and the field", async () => {
    const bad = writeCalibration(work, "bad-fit.json", {
      ...CALIBRATION,
      fit: { ...CALIBRATION.fit, lineCostUs: 10 },
    });
    const dir = join(work, "bad-run");
    mkdirSync(join(dir, "log"), { recursive: true });
    const config = join(dir, "auditpipe.json");
    writeFileSync(
      config,
      JSON.stringify({
        logDir: join(dir, "log"),
        format: "csvlog",
        state: join(dir, "state"),
        sink: join(dir, "sink"),
        listen: "127.0.0.1:0",
        calibration: bad,
      }),
    );
    const sidecar = spawnSidecar(["--config", config]);
    const { code } = await sidecar.exited;
    expect(code).toBe(1);
    expect(sidecar.stderr()).toContain("AUDITPIPE_ERR_BAD_CALIBRATION");
    expect(sidecar.stderr()).toContain(`config key calibration (${config}) ${bad}`);
    expect(sidecar.stderr()).toContain("fit.lineCostUs");
  });
});
