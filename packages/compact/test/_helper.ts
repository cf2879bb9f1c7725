/**
 * Archives made by the real pipeline: testkit's shipFixture (a committed fixture log followed by
 * FileSource and shipped in small batches), with this workspace's FileSource and LocalDirSink.
 */
import type { LogFormat } from "@auditpipe/parse";
import { LocalDirSink, type Sink } from "@auditpipe/ship";
import { FileSource } from "@auditpipe/tail";
import { fixtureShipper } from "@auditpipe/testkit";

export { LATER } from "@auditpipe/testkit";

export const shipFixture: ReturnType<typeof fixtureShipper<Sink, LogFormat>> = fixtureShipper<
  Sink,
  LogFormat
>(FileSource, LocalDirSink);
