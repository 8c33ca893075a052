#!/usr/bin/env bash
# Installs everything `make test` and `make demo` need on a fresh Debian machine:
# MariaDB server and client (the real database the tests run against), MariaDB Connector/J,
# Java for Spark, and a virtualenv with sparkcdc and its test and dev extras.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}

need_apt=()
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need_apt+=(mariadb-server)
command -v mariadb >/dev/null 2>&1 || need_apt+=(mariadb-client)
[ -f /usr/share/java/mariadb-java-client.jar ] || need_apt+=(libmariadb-java)
command -v java >/dev/null 2>&1 || need_apt+=(openjdk-17-jre-headless)
command -v psql >/dev/null 2>&1 && command -v pg_ctlcluster >/dev/null 2>&1 || need_apt+=(postgresql)
# PostGIS: a PostgreSQL sink database with the extension gets geometry columns (sinks/jdbc/postgres.py).
compgen -G "/usr/share/postgresql/*/extension/postgis.control" >/dev/null || need_apt+=(postgresql-15-postgis-3)
command -v lua5.4 >/dev/null 2>&1 || need_apt+=(lua5.4)
command -v lua5.1 >/dev/null 2>&1 || need_apt+=(lua5.1)
# patch(1) applies the Go binlog decoder's go-mysql patch (binlogdec/build.sh).
command -v patch >/dev/null 2>&1 || need_apt+=(patch)
# pt-online-schema-change, run by tests/integration/binlog/test_online_schema_change.py.
command -v pt-online-schema-change >/dev/null 2>&1 || need_apt+=(percona-toolkit)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  # The package's own service start is refused in containers; the tests start their own servers.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

stamp="$VENV/.sparkcdc-installed"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "bootstrap: installing Python packages into $VENV"
  "$VENV/bin/pip" install -q -e ".[dev]"
  touch "$stamp"
fi

# The Delta sink's jars (the Maven artifacts of the installed delta-spark release), resolved once
# into the cache's ivy/ (hack/cache-dir.sh: ~/.cache/sparkcdc by default) by Spark's own resolver;
# instant when cached.
"$VENV/bin/python" -m sparkcdc.spark.session fetch-delta-jars >/dev/null

# The Go binlog decoder of parallel catch-up (binlogdec/build.sh): built once from the Go module proxy
# into the same cache; without Go, catch-up decodes in Python.
bash binlogdec/build.sh >/dev/null

# gh-ost, run by tests/integration/binlog/test_online_schema_change.py beside pt-online-schema-change:
# built once from the Go module proxy into the same cache (hack/gh-ost.sh; the test builds it too).
if command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ]; then
  bash hack/gh-ost.sh >/dev/null
fi
