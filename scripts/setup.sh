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

# --- The machine's cache of what is built or fetched once per version -------------------------
# MinIO's binary, the Python venv and Spark's jars are kept per version in $CACHE (outside the
# checkout, as pnpm's store and pip's cache are), so a fresh clone on a machine that ran the set-up
# before links or copies them in seconds instead of building MinIO again (minutes) and pip-installing
# 0.55 GB. A version not in the cache is built there once, under a lock (parallel set-ups wait).
CACHE=${AUDITPIPE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/auditpipe}
mkdir -p "$CACHE" || die "cannot create the tools cache $CACHE (set AUDITPIPE_TOOLS_CACHE to another folder)"
# Runs "$@" holding the lock of cache entry $1 (one set-up builds an entry; others wait, then find it).
with_cache_lock() {
  local entry=$1
  shift
  (flock 9 && "$@") 9>"$entry.lock"
}

# --- MinIO, built from source (into the cache), copied into the ignored .tools/bin ---------------
MINIO_CACHED="$CACHE/minio-${MINIO_MODULE##*@}/minio"
build_minio() {
  [ -x "$MINIO_CACHED" ] && return 0
  command -v go >/dev/null || die "Go 1.24 or later is needed to build MinIO (go install $MINIO_MODULE): https://go.dev/dl (Debian 12's golang is older)"
  say "building MinIO with go install $MINIO_MODULE (about 4 minutes the first time)"
  mkdir -p "$(dirname "$MINIO_CACHED")"
  GOBIN="$(dirname "$MINIO_CACHED")" GOFLAGS=-mod=mod go install "$MINIO_MODULE" || die "go install $MINIO_MODULE failed"
}
if [ -x "$ROOT/.tools/bin/minio" ]; then
  say "MinIO already built (.tools/bin/minio)"
else
  with_cache_lock "$(dirname "$MINIO_CACHED")" build_minio
  mkdir -p "$ROOT/.tools/bin"
  cp "$MINIO_CACHED" "$ROOT/.tools/bin/minio.tmp" && mv "$ROOT/.tools/bin/minio.tmp" "$ROOT/.tools/bin/minio" \
    || die "cannot copy $MINIO_CACHED to .tools/bin"
  say "MinIO ${MINIO_MODULE##*@} in .tools/bin/minio (from $MINIO_CACHED)"
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
# The venv and the jars stay in the cache (a venv holds its own absolute path); .tools/ links them.
PYTHON_CACHED="$CACHE/python-$(printf '%s %s' "$PYTHON_TOOLS" "$(python3 -V 2>&1)" | sha256sum | cut -c1-16)"
install_python_tools() {
  [ "$(cat "$PYTHON_CACHED/.installed" 2>/dev/null)" = "$PYTHON_TOOLS" ] && return 0
  say "pip install $PYTHON_TOOLS into $PYTHON_CACHED (about 0.55 GB, 1-2 minutes the first time)"
  rm -rf "$PYTHON_CACHED"
  python3 -m venv "$PYTHON_CACHED" || die "python3 -m venv $PYTHON_CACHED failed"
  # shellcheck disable=SC2086
  "$PYTHON_CACHED/bin/pip" install -q --disable-pip-version-check $PYTHON_TOOLS \
    || die "pip install $PYTHON_TOOLS failed"
  echo "$PYTHON_TOOLS" > "$PYTHON_CACHED/.installed"
}
if [ "$(cat "$ROOT/.tools/python/.installed" 2>/dev/null)" = "$PYTHON_TOOLS" ]; then
  say "Python tools already installed (.tools/python: $PYTHON_TOOLS)"
else
  with_cache_lock "$PYTHON_CACHED" install_python_tools
  rm -rf "$ROOT/.tools/python" && mkdir -p "$ROOT/.tools" && ln -s "$PYTHON_CACHED" "$ROOT/.tools/python" \
    || die "cannot link .tools/python to $PYTHON_CACHED"
  say "Python tools in .tools/python (linked to $PYTHON_CACHED: $PYTHON_TOOLS)"
fi
POM_SHA=$(sha256sum "$ROOT/scripts/spark-s3a.pom.xml" | cut -d' ' -f1)
JARS_CACHED="$CACHE/spark-jars-${POM_SHA:0:16}"
fetch_spark_jars() {
  ls "$JARS_CACHED"/hadoop-aws-*.jar >/dev/null 2>&1 \
    && [ "$(cat "$JARS_CACHED/.pom.sha256" 2>/dev/null)" = "$POM_SHA" ] && return 0
  say "fetching hadoop-aws and the AWS SDK modules S3A uses (mvn, into $JARS_CACHED)"
  rm -rf "$JARS_CACHED"
  mvn -q -B -f "$ROOT/scripts/spark-s3a.pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$JARS_CACHED" || die "mvn dependency:copy-dependencies (scripts/spark-s3a.pom.xml) failed"
  echo "$POM_SHA" > "$JARS_CACHED/.pom.sha256"
}
if ls "$ROOT"/.tools/spark-jars/hadoop-aws-*.jar >/dev/null 2>&1 \
  && [ "$(cat "$ROOT/.tools/spark-jars/.pom.sha256" 2>/dev/null)" = "$POM_SHA" ]; then
  say "Spark's S3A jars already fetched (.tools/spark-jars)"
else
  with_cache_lock "$JARS_CACHED" fetch_spark_jars
  rm -rf "$ROOT/.tools/spark-jars" && ln -s "$JARS_CACHED" "$ROOT/.tools/spark-jars" \
    || die "cannot link .tools/spark-jars to $JARS_CACHED"
  say "Spark's S3A jars in .tools/spark-jars (linked to $JARS_CACHED)"
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
