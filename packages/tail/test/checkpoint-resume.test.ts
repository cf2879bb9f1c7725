import type { FileCheckpoint } from "@auditpipe/tail";
import { describe, expect, it } from "vitest";
import { Checkpointer } from "../src/_checkpoint.ts";

const base: FileCheckpoint = {
  fingerprint: "f1",
  path: "/var/log/syslog/postgres.log",
  position: 5000,
  marker: "m",
  inflightEnd: null,
  done: false,
  modified: "2026-11-24T20:00:00.000Z",
};

describe("Checkpointer.resumePoint (where a syslog file's held messages are read again)", () => {
  it("resumes at the checkpoint's position when it records nothing held", () => {
    expect(Checkpointer.resumePoint(base)).toEqual({ from: 5000, held: [] });
  });

  it("resumes at the oldest held message and lists the held offsets before the position", () => {
    expect(Checkpointer.resumePoint({ ...base, resume: 1200, held: [1200, 3400] })).toEqual({
      from: 1200,
      held: [1200, 3400],
    });
  });

  it("ignores what a damaged file says: offsets outside [resume, position), a resume past the position", () => {
    expect(Checkpointer.resumePoint({ ...base, resume: 1200, held: [800, 1200, 5000, 1.5] })).toEqual({
      from: 1200,
      held: [1200],
    });
    expect(Checkpointer.resumePoint({ ...base, resume: 6000, held: [6000] })).toEqual({
      from: 5000,
      held: [],
    });
    expect(Checkpointer.resumePoint({ ...base, resume: -1, held: [10] })).toEqual({ from: 5000, held: [] });
    expect(Checkpointer.resumePoint({ ...base, resume: 1200, held: [] })).toEqual({ from: 5000, held: [] });
  });
});
