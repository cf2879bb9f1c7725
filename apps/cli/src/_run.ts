// Runs the CLI from TypeScript source (tests, `pnpm auditpipe` during development); Node strips
// the types. Its compile cache keeps the stripped and compiled code, so every start after the
// first skips stripping: main.ts is imported only once the cache is on.
import { enableCompileCache } from "node:module";

enableCompileCache();
const { main } = await import("./main.ts");
process.exitCode = await main(process.argv.slice(2));
