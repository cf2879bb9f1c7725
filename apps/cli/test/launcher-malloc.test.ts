import { describe, expect, it } from "vitest";
import { dropLauncherMalloc } from "../src/run/launcher-malloc.ts";

describe("the launcher's malloc setting, once run started", () => {
  it("is not handed on to run's children; a user's own value is", () => {
    const set = { MALLOC_MMAP_THRESHOLD_: "131072", AUDITPIPE_SET_MALLOC: "1", PATH: "/bin" };
    dropLauncherMalloc(set);
    expect(set).toEqual({ PATH: "/bin" });
    const own = { MALLOC_MMAP_THRESHOLD_: "4194304", PATH: "/bin" };
    dropLauncherMalloc(own);
    expect(own).toEqual({ MALLOC_MMAP_THRESHOLD_: "4194304", PATH: "/bin" });
  });
});
