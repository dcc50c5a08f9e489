#!/usr/bin/env bash
# Build .venv with a Python >= 3.12, the locked dependencies and this project (editable).
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(scripts/find-python.sh)
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)'; then
  rm -rf .venv
  "$py" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e . 2>&1 \
  | grep -v "is ignored: it is neither a file nor a directory" || true
.venv/bin/python -c 'import harbor, pytest_skilleval, verifier' 
touch .venv/.installed
