#!/usr/bin/env bash
# A throwaway PostgreSQL server for tests/test_web*.py, from Debian's postgresql package.
#   eval "$(scripts/postgres_for_tests.sh start)"   # prints the exports: KERNELCRAFT_TEST_POSTGRES, KC_PG_DIR
#   scripts/postgres_for_tests.sh stop              # stops the server in $KC_PG_DIR and removes it
# initdb refuses to run as root: as root the server runs as the `postgres` user (runuser), otherwise
# as the caller. Data in a temp dir, fsync off, loopback only, trust auth for the user `kc`.
set -euo pipefail
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bindir" ] || bindir=$(dirname "$(command -v initdb)")
as_db_user() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case "${1:-}" in
  start)
    dir=$(mktemp -d /tmp/kc_pg.XXXXXX)
    [ "$(id -u)" -ne 0 ] || chown postgres "$dir"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_db_user "$bindir/initdb" -D "$dir/data" -U kc -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
    as_db_user "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-h 127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null \
      || { cat "$dir/server.log" >&2; exit 1; }
    echo "export KC_PG_DIR=$dir"
    echo "export KERNELCRAFT_TEST_POSTGRES=postgresql+psycopg://kc@127.0.0.1:$port/postgres"
    ;;
  stop)
    dir=${KC_PG_DIR:?KC_PG_DIR is not set: nothing to stop}
    as_db_user "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
