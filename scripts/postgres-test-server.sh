#!/usr/bin/env bash
# A private PostgreSQL server for the tests, started and stopped by them
# (CTest's postgres_server fixture, and the fault tests for a server of
# their own). Nothing system-wide is touched: no cluster of the Debian
# package, no port 5432, no service.
#
#   scripts/postgres-test-server.sh start STATE_DIR
#   scripts/postgres-test-server.sh stop  STATE_DIR
#   scripts/postgres-test-server.sh restart STATE_DIR [DOWN_SECONDS]
#
# start: initdb in a fresh directory under /tmp (a short path: a unix
# socket's path is at most 107 bytes), as the `postgres` user when run as
# root (initdb refuses root); a server on 127.0.0.1 only, on a free port it
# picks, with its unix socket in that directory; fsync off (the tests
# simulate process crashes, never a machine crash); a database
# `switchboard_test`. Local (socket) connections and TCP connections as
# user `swb` need no password; role `swb_password` must give its password
# over TCP (the wrong-password test). It waits until the server accepts,
# then writes into STATE_DIR:
#   url        postgresql:///switchboard_test?host=SOCKET_DIR&port=PORT&user=swb
#   tcp_url    postgresql://swb@127.0.0.1:PORT/switchboard_test
#   port, server_dir, bin_dir
# stop: pg_ctl stop -m immediate, then removes the server's directory.
# restart: the server crashes (pg_ctl stop -m immediate: no checkpoint, its
# clients cut), stays down DOWN_SECONDS (default 1), and starts again on
# the same port and directory, recovering from its WAL (the fault tests).
# A start on a STATE_DIR whose server still runs stops that one first.
set -euo pipefail

pg_bin="${SWITCHBOARD_POSTGRES_BIN:-/usr/lib/postgresql/15/bin}"
command="${1:-}"
state_dir="${2:-}"
if [[ -z "$command" || -z "$state_dir" ]]; then
  echo "usage: $0 start|stop|restart STATE_DIR [DOWN_SECONDS]" >&2
  exit 2
fi

as_postgres() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

stop_server() {
  [[ -f "$state_dir/server_dir" ]] || return 0
  local server_dir
  server_dir=$(cat "$state_dir/server_dir")
  if [[ -d "$server_dir/data" ]]; then
    as_postgres "$pg_bin/pg_ctl" -D "$server_dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$server_dir"
  rm -f "$state_dir/server_dir" "$state_dir/url" "$state_dir/tcp_url" "$state_dir/port"
}

# Starts the server of `server_dir` on `port`; fails when it does not come up.
run_server() {
  local server_dir="$1" port="$2"
  as_postgres "$pg_bin/pg_ctl" -D "$server_dir/data" -l "$server_dir/log" -w -t 60 start -o \
    "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$server_dir -c fsync=off \
     -c full_page_writes=off -c max_connections=200 -c shared_buffers=32MB" >/dev/null
}

# A crash and a start again on the same port (clients reconnect to the same URL).
restart_server() {
  local down="${1:-1}" server_dir port attempt
  server_dir=$(cat "$state_dir/server_dir")
  port=$(cat "$state_dir/port")
  as_postgres "$pg_bin/pg_ctl" -D "$server_dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  sleep "$down"
  # A client's connection attempt may hold the port for a moment: retry.
  for attempt in 1 2 3 4 5; do
    run_server "$server_dir" "$port" && return 0
    sleep 0.5
  done
  echo "postgres-test-server: the server did not start again on port $port; its log:" >&2
  tail -n 50 "$server_dir/log" >&2 || true
  exit 1
}

start_server() {
  if [[ ! -x "$pg_bin/initdb" ]]; then
    echo "postgres-test-server: no PostgreSQL server at $pg_bin (scripts/setup.sh installs postgresql-15)" >&2
    exit 1
  fi
  mkdir -p "$state_dir"
  stop_server
  local server_dir port attempt
  server_dir=$(mktemp -d /tmp/swbpg.XXXXXX)
  chmod 700 "$server_dir"
  [[ $(id -u) -eq 0 ]] && chown postgres: "$server_dir"
  echo "$server_dir" > "$state_dir/server_dir"
  as_postgres "$pg_bin/initdb" -D "$server_dir/data" -U swb --auth=trust -E UTF8 --no-locale -N \
    >"$server_dir/initdb.log" 2>&1 || { cat "$server_dir/initdb.log" >&2; exit 1; }
  cat > "$server_dir/data/pg_hba.conf" <<'HBA'
local all all                  trust
host  all swb    127.0.0.1/32  trust
host  all all    127.0.0.1/32  scram-sha-256
HBA
  # Another process may take the port between picking and binding: retry.
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    if run_server "$server_dir" "$port"; then
      break
    fi
    port=""
  done
  if [[ -z "$port" ]]; then
    echo "postgres-test-server: the server did not start; its log:" >&2
    cat "$server_dir/log" >&2 || true
    exit 1
  fi
  "$pg_bin/pg_isready" -q -h "$server_dir" -p "$port" -t 30
  local psql=("$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$server_dir" -p "$port" -U swb -d postgres)
  as_postgres "${psql[@]}" -c "CREATE DATABASE switchboard_test" \
    -c "CREATE ROLE swb_password LOGIN PASSWORD 'the-right-password'" \
    -c "GRANT ALL ON DATABASE switchboard_test TO swb_password" >/dev/null
  echo "$port" > "$state_dir/port"
  echo "$pg_bin" > "$state_dir/bin_dir"
  echo "postgresql:///switchboard_test?host=$server_dir&port=$port&user=swb" > "$state_dir/url"
  echo "postgresql://swb@127.0.0.1:$port/switchboard_test" > "$state_dir/tcp_url"
  echo "postgres-test-server: PostgreSQL on 127.0.0.1:$port and $server_dir (state in $state_dir)"
}

case "$command" in
  start) start_server ;;
  stop) stop_server ;;
  restart) restart_server "${3:-1}" ;;
  *) echo "usage: $0 start|stop|restart STATE_DIR [DOWN_SECONDS]" >&2; exit 2 ;;
esac
