#!/usr/bin/env bash
# The README's main job: a real PostgreSQL with pgaudit runs a scripted session and a pgbench
# load (written by fixtures/generate into a scratch dir), then `auditpipe analyze` reports
# what pgAudit wrote. Needs nothing but what scripts/setup.sh installed; leaves nothing behind.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d -t auditpipe-demo-XXXXXX)
trap 'rm -rf "$out"' EXIT
echo "demo: starting a scratch PostgreSQL 15 + pgaudit (pgaudit.log=all) and running a session with pgbench load..."
fixtures/generate --case session-all --out "$out" | sed 's/^fixtures:/demo:/'
echo "demo: npx auditpipe analyze $out/session-all/postgresql.csv.gz"
echo
# The workspace bin that `npx auditpipe` runs, called directly: npx under pnpm prints config noise.
node_modules/.bin/auditpipe analyze "$out/session-all/postgresql.csv.gz"
