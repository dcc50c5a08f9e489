#!/usr/bin/env bash
# Build .venv with a Python >= 3.12, the locked dependencies and this project (editable), with the `dev` extra:
# ruff and mypy for `make lint` / `make typecheck` and the pre-commit hooks.
# Prints progress: a first install downloads ~150 packages and takes a minute or two.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "bootstrap: $*" >&2; }
py=$(scripts/find-python.sh)
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)'; then
  say "creating .venv with $("$py" --version 2>&1)"
  rm -rf .venv
  "$py" -m venv .venv
fi
say "installing the locked dependencies into .venv (a first install takes a minute or two)..."
# pip's own output is one line per package; keep a running count, the final list and any error.
.venv/bin/python -m pip install --disable-pip-version-check --progress-bar off -c constraints.txt -e '.[dev,nv-bridge]' 2>&1 \
  | awk '
      /is ignored: it is neither a file nor a directory/ { next }
      /^Collecting / { n++; if (n % 20 == 0) { printf "bootstrap:   %d packages fetched...\n", n; fflush() } next }
      /^Installing collected packages/ { printf "bootstrap:   installing %d packages...\n", split($0, names, ","); fflush(); next }
      /^Successfully installed/ { print "bootstrap:   done"; fflush(); next }
      /^(ERROR|error|WARNING)/ || err { err = 1; print; fflush() }
    ' >&2
.venv/bin/python -c 'import harbor, pytest_skilleval, verifier'
touch .venv/.installed
say ".venv ready"
