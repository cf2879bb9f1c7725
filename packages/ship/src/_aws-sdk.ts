/**
 * The AWS SDK, imported on first use rather than with this package: a sidecar writing to a local
 * directory, and `analyze`, never load it (docs/architecture.md, "Start-up").
 */
export const s3Sdk = (): Promise<typeof import("@aws-sdk/client-s3")> => import("@aws-sdk/client-s3");
