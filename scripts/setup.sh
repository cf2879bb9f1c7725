#!/usr/bin/env bash
# Installs what auditpipe's build, tests and demo need, and nothing that is already there.
# Idempotent and unattended: safe to run on every CI start. Needs root for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

say() { printf '\033[1msetup:\033[0m %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

MINIO_MODULE="github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"
PG_MAJOR=15
# Any Node.js with npm starts the set-up (package.json's engines: what pnpm itself runs on); the
# workspace's scripts then run on the Node.js 24 installed below, whatever the machine has.
command -v node >/dev/null && command -v npm >/dev/null \
  || die "node and npm are needed to start the set-up: apt-get install nodejs npm (any Node.js from $(sed -n 's/.*"node": *">=\([0-9.]*\)".*/\1/p' package.json))"
PNPM_VERSION=$(node -p 'require("./package.json").packageManager.split("@")[1]')

# --- Debian packages: PostgreSQL 15 + pgaudit, rsyslog, tini (the Docker image's PID 1, run by a test),
# curl and jq (the docs' commands use them: the API, MinIO's bucket in docs/archive.md) ---
need_apt=()
[ -x "/usr/lib/postgresql/$PG_MAJOR/bin/postgres" ] || need_apt+=("postgresql-$PG_MAJOR")
[ -f "/usr/lib/postgresql/$PG_MAJOR/lib/pgaudit.so" ] || need_apt+=("postgresql-$PG_MAJOR-pgaudit")
# Debian's chromium: the bench report test opens the HTML report in it (playwright-core downloads no browser).
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
[ -x /usr/sbin/rsyslogd ] || need_apt+=(rsyslog)
[ -x /usr/bin/tini ] || need_apt+=(tini)
command -v curl >/dev/null || need_apt+=(curl)
command -v jq >/dev/null || need_apt+=(jq)
if [ ${#need_apt[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "need root to apt-get install ${need_apt[*]} (run as root, or install them yourself)"
  say "apt-get update"
  apt-get update -q >/dev/null || die "apt-get update failed"
  say "apt-get install ${need_apt[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need_apt[@]}" >/dev/null \
    || die "apt-get install ${need_apt[*]} failed"
else
  say "postgresql-$PG_MAJOR, pgaudit, rsyslog, chromium, tini, curl and jq already installed"
fi

# --- MinIO, built from source into the ignored .tools/bin ------------------------------------
if [ -x "$ROOT/.tools/bin/minio" ]; then
  say "MinIO already built (.tools/bin/minio)"
else
  command -v go >/dev/null || die "Go 1.24 or later is needed to build MinIO (go install $MINIO_MODULE): https://go.dev/dl (Debian 12's golang is older)"
  say "building MinIO with go install $MINIO_MODULE (about 4 minutes the first time)"
  mkdir -p "$ROOT/.tools/bin"
  GOBIN="$ROOT/.tools/bin" GOFLAGS=-mod=mod go install "$MINIO_MODULE" || die "go install $MINIO_MODULE failed"
fi

# --- The archive tests' Python tools and Spark's S3A connector, into the ignored .tools/ ----------
# pyspark (a real Spark in local mode; it runs on the Java 17 JRE), sqlglot (parses the Athena and
# Trino DDL docs/archive.md ships) and ocsf-emitter (the OCSF schema's classes, to validate events
# offline): about 0.55 GB and 1-2 minutes the first time. The S3A jars: hadoop-aws at pyspark's
# Hadoop version and only the AWS SDK modules S3A uses (scripts/spark-s3a.pom.xml): 13 MB.
PYTHON_TOOLS="pyspark==4.3.0 sqlglot==30.30.0 ocsf-emitter==0.3.0"
need_apt=()
command -v java >/dev/null || need_apt+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || need_apt+=(maven)
command -v python3 >/dev/null && python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3 python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "need root to apt-get install ${need_apt[*]} (run as root, or install them yourself)"
  say "apt-get install ${need_apt[*]}"
  apt-get update -q >/dev/null || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need_apt[@]}" >/dev/null \
    || die "apt-get install ${need_apt[*]} failed"
fi
if [ "$(cat "$ROOT/.tools/python/.installed" 2>/dev/null)" = "$PYTHON_TOOLS" ]; then
  say "Python tools already installed (.tools/python: $PYTHON_TOOLS)"
else
  say "pip install $PYTHON_TOOLS into .tools/python (about 0.55 GB, 1-2 minutes the first time)"
  rm -rf "$ROOT/.tools/python"
  python3 -m venv "$ROOT/.tools/python" || die "python3 -m venv .tools/python failed"
  # shellcheck disable=SC2086
  "$ROOT/.tools/python/bin/pip" install -q --disable-pip-version-check $PYTHON_TOOLS \
    || die "pip install $PYTHON_TOOLS failed"
  echo "$PYTHON_TOOLS" > "$ROOT/.tools/python/.installed"
fi
if ls "$ROOT"/.tools/spark-jars/hadoop-aws-*.jar >/dev/null 2>&1 \
  && [ "$(cat "$ROOT/.tools/spark-jars/.pom.sha256" 2>/dev/null)" = "$(sha256sum "$ROOT/scripts/spark-s3a.pom.xml" | cut -d' ' -f1)" ]; then
  say "Spark's S3A jars already fetched (.tools/spark-jars)"
else
  say "fetching hadoop-aws and the AWS SDK modules S3A uses (mvn, into .tools/spark-jars)"
  rm -rf "$ROOT/.tools/spark-jars"
  mvn -q -B -f "$ROOT/scripts/spark-s3a.pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$ROOT/.tools/spark-jars" || die "mvn dependency:copy-dependencies (scripts/spark-s3a.pom.xml) failed"
  sha256sum "$ROOT/scripts/spark-s3a.pom.xml" | cut -d' ' -f1 > "$ROOT/.tools/spark-jars/.pom.sha256"
fi

# --- pnpm, at the version package.json pins ----------------------------------------------------
if [ "$(pnpm --version 2>/dev/null || true)" = "$PNPM_VERSION" ]; then
  say "pnpm $PNPM_VERSION already installed"
else
  # corepack fails its signature check against this registry, so npm installs pnpm.
  say "npm install -g pnpm@$PNPM_VERSION"
  npm install -g "pnpm@$PNPM_VERSION" >/dev/null || die "npm install -g pnpm@$PNPM_VERSION failed"
fi

say "pnpm install --frozen-lockfile"
pnpm install --frozen-lockfile --reporter=append-only >/dev/null || die "pnpm install --frozen-lockfile failed"

# --- Node.js 24 ----------------------------------------------------------------------------------
# The workspace root lists the npm registry's node-linux-<arch> package (the official binary) as an
# optional dependency: pnpm puts it in node_modules/.bin, so every `pnpm <script>` (build, test,
# demo) and `npx auditpipe` here run on it, whatever Node.js the machine has.
node24="$ROOT/node_modules/.bin/node"
if [ -x "$node24" ]; then
  say "Node.js $("$node24" --version) for the workspace's scripts (node_modules/.bin/node)"
elif [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 22 ]; then
  say "no Node.js 24 package for $(uname -m): using the machine's $(node --version)"
else
  die "Node.js $(node --version) is too old and the npm registry has no Node.js 24 binary package for $(uname -sm): install Node.js 22.15 or later (https://nodejs.org)"
fi

# Only the CLI's bundle: what `pnpm demo` and `npx auditpipe` run (a few seconds). Every package's
# tsc build is `pnpm build`, which `pnpm check` runs itself: building it here too would do it twice.
say "pnpm --filter auditpipe build (the CLI; pnpm build builds every package)"
pnpm -s --filter auditpipe build >/dev/null || die "pnpm --filter auditpipe build failed (run it yourself to see why)"
say "ready"
