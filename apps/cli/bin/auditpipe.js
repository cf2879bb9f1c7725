#!/usr/bin/env node
// The built CLI (pnpm build, which the README's set-up runs).
import { main } from "../dist/main.js";

process.exitCode = await main(process.argv.slice(2));
