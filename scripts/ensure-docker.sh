#!/usr/bin/env bash
# Make `docker` usable for the tests: Debian's docker.io (daemon), the Compose v2 and buildx CLI plugins,
# and a running daemon. Quick no-op when all three are there. Needs root for the installs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PLUGIN_DIR=/usr/local/lib/docker/cli-plugins
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/skilleval-dockerd.log}

command -v dockerd >/dev/null || "$here/apt-ensure.sh" docker.io

# Compose v2 (Harbor's docker environment drives it) and buildx (`docker build` of a recent CLI needs it):
# bookworm has neither as a CLI plugin, trixie's docker-compose and docker-buildx packages ship them.
# Fetched with a throwaway apt state so the system's sources and package lists stay untouched.
missing=()
docker compose version >/dev/null 2>&1 || missing+=(docker-compose)
docker buildx version >/dev/null 2>&1 || missing+=(docker-buildx)
if [ ${#missing[@]} -gt 0 ]; then
  echo "docker: installing ${missing[*]} (CLI plugins) from Debian trixie" >&2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
  echo "deb http://deb.debian.org/debian trixie main" >"$tmp/sources.list"
  opts=(-q -o Dir::Etc::SourceList="$tmp/sources.list" -o Dir::Etc::SourceParts=/nonexistent
        -o Dir::State::Lists="$tmp/lists" -o Dir::Cache="$tmp/cache" -o APT::Get::List-Cleanup=0
        -o APT::Sandbox::User=root)
  apt-get "${opts[@]}" update >/dev/null
  mkdir -p "$PLUGIN_DIR"
  for pkg in "${missing[@]}"; do
    (cd "$tmp" && apt-get "${opts[@]}" download "$pkg/trixie" >/dev/null)
    dpkg-deb -x "$tmp/${pkg}"_*.deb "$tmp/root"
    install -m 0755 "$tmp/root/usr/libexec/docker/cli-plugins/$pkg" "$PLUGIN_DIR/$pkg"
  done
  docker compose version >&2
  docker buildx version >&2
fi

# A daemon: start one in the background if none answers, then wait until it does.
if ! docker info >/dev/null 2>&1; then
  echo "docker: starting dockerd (log: $DOCKERD_LOG)" >&2
  setsid nohup dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { echo "dockerd did not come up; see $DOCKERD_LOG" >&2; tail -20 "$DOCKERD_LOG" >&2; exit 1; }
fi
