import cliPackage from "../package.json" with { type: "json" };

/** The one place the version comes from: apps/cli/package.json (inlined into the published bundle). */
export const VERSION: string = cliPackage.version;

/** What `auditpipe --version` prints: the version, and the Node.js it runs on. */
export function versionLine(): string {
  return `auditpipe ${VERSION} (Node.js ${process.versions.node}, ${process.platform}-${process.arch})`;
}
