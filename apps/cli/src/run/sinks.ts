import { type CompactedFile, LocalDirSink, type RedactionMode, type Sink } from "@auditpipe/ship";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { UsageError } from "../usage-error.ts";
import type { RunConfig } from "./config.ts";
import type { CoverageJournal } from "./coverage-recorder.ts";

/** The sink the sidecar writes to, with what the sidecar needs around it. */
export interface ConfiguredSink {
  sink: Sink;
  /** Why the sink is not healthy, or undefined when it is. */
  unhealthy(): string | undefined;
  /** For metrics: bytes waiting in the spool (0 for sinks without one). */
  spoolBytes(): number;
  /** Adds the sink's own metrics (the manifest chain's) to the registry. */
  registerMetrics(registry: Registry): void;
  /** Where coverage events are journaled: the S3 archive's manifest journal (none for a local directory). */
  coverage?: CoverageJournal;
  /** Whether the sink reports each failed attempt itself (`SinkEvents.attemptFailed`). */
  countsAttempts: boolean;
  /** Closes the sink; an archive's stop manifest may take `budgetMs` (what the stop has left). */
  close(budgetMs?: number): Promise<void>;
  /** S3: what the sidecar's own compaction needs (run/compaction.ts); absent for a local directory. */
  compaction?: {
    prefix: string;
    host: string;
    /** The manifest journal's recordCompaction; rejects while the journal is not open yet. */
    record(file: CompactedFile): Promise<void>;
    /** The manifest journal's announceCompaction (signed into a manifest when it resolves); rejects likewise. */
    announce(file: CompactedFile & { supersedes: string }): Promise<void>;
  };
}

/** `s3://bucket/prefix` → bucket and prefix; undefined for anything else (a local directory). */
export function parseS3Url(sink: string): { bucket: string; prefix: string } | undefined {
  if (!sink.startsWith("s3://")) return undefined;
  const rest = sink.slice("s3://".length);
  const slash = rest.indexOf("/");
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const prefix = slash < 0 ? "" : rest.slice(slash + 1).replace(/^\/+|\/+$/g, "");
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw new UsageError(
      `run: --sink ${sink}: "${bucket}" is not a valid bucket name (expected s3://bucket/prefix)`,
    );
  }
  return { bucket, prefix };
}

/**
 * What `--redact` asks for. Redaction happens where records are built, before they are encoded:
 * the sources and the meter see (and count) the original records; what is stored has literals
 * and/or parameter values replaced, and says so. Undefined when nothing is redacted.
 */
export function redactionMode(config: RunConfig): RedactionMode | undefined {
  const mode: RedactionMode = {
    literals: config.redact.includes("literals"),
    parameters: config.redact.includes("parameters"),
  };
  return mode.literals || mode.parameters ? mode : undefined;
}

/** What a sink tells the sidecar as it goes, besides acknowledgements. */
export interface SinkEvents {
  /** An upload attempt failed; the sink retries. */
  attemptFailed(sink: string, error: unknown): void;
}

/** Builds the configured sink: a local directory, or S3 with its spool and manifest journal. */
export async function createSink(
  config: RunConfig,
  logger: Logger,
  events: SinkEvents,
): Promise<ConfiguredSink> {
  const s3 = parseS3Url(config.sink);
  if (!s3) {
    const sink = new LocalDirSink({ dir: config.sink, compression: config.compression });
    return {
      sink,
      unhealthy: () => undefined,
      spoolBytes: () => 0,
      registerMetrics: () => {},
      countsAttempts: false,
      close: () => sink.close(),
    };
  }

  // Imported here: a local-directory sidecar starts without loading the AWS SDK.
  const { createS3Sink } = await import("./s3-sink.ts");
  return createS3Sink(config, s3, logger, events);
}
