#!/usr/bin/env bash
# Build .venv-harbor-VERSION: the locked dependencies with Harbor pinned to VERSION instead of constraints.txt's,
# and this project (editable, `dev` extra), so the oldest supported Harbor is tested beside the locked one.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: scripts/bootstrap-harbor.sh HARBOR_VERSION}
venv=".venv-harbor-$version"
say() { echo "bootstrap-harbor: $*" >&2; }
py=$(scripts/find-python.sh)
if [ ! -x "$venv/bin/python" ]; then
  say "creating $venv with $("$py" --version 2>&1)"
  "$py" -m venv "$venv"
fi
constraints="$venv/constraints.txt"
grep -v '^harbor==' constraints.txt > "$constraints"
echo "harbor==$version" >> "$constraints"
say "installing the locked dependencies with harbor==$version into $venv..."
"$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off -q -c "$constraints" -e '.[dev,nv-bridge]'
"$venv/bin/python" -c "import harbor, importlib.metadata as m; v = m.version('harbor'); assert v == '$version', v"
touch "$venv/.installed"
say "$venv ready (harbor $version)"
