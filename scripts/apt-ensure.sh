#!/usr/bin/env bash
# Install the given Debian packages if any is missing; quick no-op when all are there.
# Waits for the dpkg lock (another process may be installing) instead of failing.
set -euo pipefail
missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
command -v apt-get >/dev/null || { echo "apt-get not found: install ${missing[*]} yourself" >&2; exit 1; }
apt=(apt-get -y -q -o DPkg::Lock::Timeout=900 -o Dpkg::Use-Pty=0)
export DEBIAN_FRONTEND=noninteractive
echo "apt: installing ${missing[*]}" >&2
for attempt in 1 2 3; do
  if "${apt[@]}" install --no-install-recommends "${missing[@]}" >/tmp/apt-ensure.$$.log 2>&1; then
    rm -f /tmp/apt-ensure.$$.log; exit 0
  fi
  # Stale package lists or a lock held past the timeout: refresh and retry.
  "${apt[@]}" update >/dev/null 2>&1 || sleep 10
done
cat /tmp/apt-ensure.$$.log >&2
exit 1
