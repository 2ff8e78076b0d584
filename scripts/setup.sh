#!/usr/bin/env bash
# Installs everything Switchboard needs to build and test on Debian 12.
# Idempotent: safe to run again. Runs as root (or through sudo when present).
#
# Debian packages are installed system-wide. Two packages are only unpacked
# into a build-local prefix (.deps/ by default) because their Debian packages
# drag in unrelated libraries (Qt5, Poco, Flask …) we never use:
#   - libvalijson-dev        header-only JSON Schema validator
#   - json-schema-test-suite the official JSON-Schema-Test-Suite data files
# and one because installing it would start a service on port 9090:
#   - prometheus             promtool and a Prometheus server for the /metrics test
#
# PostgreSQL 15 (server and libpq-dev) is installed without a cluster: the
# PostgreSQL store's tests start a private server of their own
# (scripts/postgres-test-server.sh); nothing listens on port 5432.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deps_dir="${SWITCHBOARD_DEPS_DIR:-$repo_root/.deps}"

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates openssl
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libssl-dev libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev
  libsqlite3-dev libre2-dev
  clang libclang-rt-14-dev
  curl python3
  # The browser the page's tests drive (tests/web, with playwright-core):
  # about 80 MB to download, 360 MB installed with chromium-common.
  chromium
)

# The MCP tests run npm peers (tests/mcp_peers), the LangGraph SDK suite
# (tests/langgraph_sdk) drives `switchboard serve`, and the page's tests run
# playwright-core (tests/web), with Node.js: Debian's (18) when the machine
# has none of its own.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

missing_packages() {
  local pkg
  for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
  done
}

install_debian_packages() {
  local missing
  missing=$(missing_packages)
  if [[ -z "$missing" ]]; then
    echo "setup: Debian packages already installed"
    return
  fi
  echo "setup: installing" $missing
  as_root apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends $missing
}

# Unpacks a Debian package's files (no dependencies, no maintainer scripts)
# into $deps_dir/<name>. A stamp file holding the version makes it idempotent.
unpack_package() {
  local name=$1 target="$deps_dir/$1" version
  version=$(apt-cache policy "$name" | awk '/Candidate:/ {print $2}')
  if [[ -z "$version" || "$version" == "(none)" ]]; then
    apt-get update -qq 2>/dev/null || as_root apt-get update -qq
    version=$(apt-cache policy "$name" | awk '/Candidate:/ {print $2}')
  fi
  if [[ -f "$target/.version" && "$(cat "$target/.version")" == "$version" ]]; then
    echo "setup: $name $version already unpacked"
    return
  fi
  local tmp
  tmp=$(mktemp -d)
  # apt downloads as the unprivileged _apt user when it can write there.
  chown _apt "$tmp" 2>/dev/null || true
  (cd "$tmp" && apt-get download -qq "$name")
  rm -rf "$target"
  mkdir -p "$target"
  dpkg-deb -x "$tmp"/"$name"_*.deb "$target"
  echo "$version" > "$target/.version"
  rm -rf "$tmp"
  echo "setup: unpacked $name $version into $target"
}

# postgresql-common reads createcluster.conf when postgresql-15 is
# configured: with create_main_cluster = false no cluster is created, so no
# server starts (and none is left on port 5432). The setting goes in between
# the two installs, as Debian's own PostgreSQL images do; a policy-rc.d that
# refuses every service start covers the install itself on machines without
# systemd (removed afterwards unless it was there before).
install_postgresql() {
  local wanted=(postgresql-15 libpq-dev) missing=() pkg
  for pkg in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "setup: PostgreSQL packages already installed"
    return
  fi
  echo "setup: installing ${missing[*]} (no cluster, no service)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends postgresql-common
  as_root sed -ri 's/^#?[[:space:]]*create_main_cluster[[:space:]]*=.*$/create_main_cluster = false/' \
    /etc/postgresql-common/createcluster.conf
  grep -q '^create_main_cluster = false' /etc/postgresql-common/createcluster.conf ||
    echo 'create_main_cluster = false' | as_root tee -a /etc/postgresql-common/createcluster.conf >/dev/null
  local policy=/usr/sbin/policy-rc.d added_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\n# setup.sh: no service starts while PostgreSQL installs\nexit 101\n' | as_root tee $policy >/dev/null
    as_root chmod 755 $policy
    added_policy=1
  fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    { [[ $added_policy -eq 1 ]] && as_root rm -f $policy; exit 1; }
  [[ $added_policy -eq 1 ]] && as_root rm -f $policy
  return 0
}

install_debian_packages
install_postgresql
mkdir -p "$deps_dir"
unpack_package libvalijson-dev
unpack_package json-schema-test-suite
unpack_package prometheus
echo "setup: done"
