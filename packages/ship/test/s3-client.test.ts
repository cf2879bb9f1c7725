import { createS3Client, resolveS3Region, S3Sink } from "@auditpipe/ship";
import { afterEach, describe, expect, it } from "vitest";

const saved = { AWS_REGION: process.env.AWS_REGION, AWS_DEFAULT_REGION: process.env.AWS_DEFAULT_REGION };
afterEach(() => {
  for (const [name, value] of Object.entries(saved))
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
});

function env(vars: { AWS_REGION?: string; AWS_DEFAULT_REGION?: string }): void {
  delete process.env.AWS_REGION;
  delete process.env.AWS_DEFAULT_REGION;
  Object.assign(process.env, vars);
}

describe("the one S3 client factory and its region rule", () => {
  it("takes the region given, else AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1 with an endpoint", () => {
    env({ AWS_REGION: "eu-west-1", AWS_DEFAULT_REGION: "eu-central-1" });
    expect(resolveS3Region("ap-south-1", undefined)).toBe("ap-south-1");
    expect(resolveS3Region(undefined, undefined)).toBe("eu-west-1");
    env({ AWS_DEFAULT_REGION: "eu-central-1" });
    expect(resolveS3Region(undefined, "http://127.0.0.1:9000")).toBe("eu-central-1");
    env({});
    expect(resolveS3Region(undefined, "http://127.0.0.1:9000")).toBe("us-east-1");
    expect(resolveS3Region(undefined, undefined)).toBeUndefined(); // the SDK's own chain (a profile)
  });

  it("gives the sink, and any client it makes, the same region (AWS_DEFAULT_REGION included)", async () => {
    env({ AWS_DEFAULT_REGION: "eu-central-1" });
    const sink = new S3Sink({ bucket: "b", spoolDir: "/nonexistent" });
    expect(sink.options.region).toBe("eu-central-1");
    const client = await createS3Client({});
    try {
      expect(await client.config.region()).toBe("eu-central-1");
      expect(client.config.forcePathStyle).toBe(false);
    } finally {
      client.destroy();
    }
  });
});
