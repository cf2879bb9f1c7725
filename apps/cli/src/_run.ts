// Runs the CLI from TypeScript source (tests, `pnpm auditpipe` during development).
import { main } from "./main.ts";

process.exitCode = await main(process.argv.slice(2));
