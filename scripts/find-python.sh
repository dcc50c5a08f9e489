#!/usr/bin/env bash
# Print the path of a Python >= 3.12: PATH first, then pyenv's installed versions.
set -u
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
for name in python3.13 python3.12 python3 python; do
  p=$(command -v "$name" 2>/dev/null) || continue
  # pyenv shims answer for versions that are not selected; ask the interpreter itself.
  ok "$p" && { "$p" -c 'import sys; print(sys.executable)'; exit 0; }
done
if command -v pyenv >/dev/null 2>&1; then
  root=$(pyenv root)
  for v in $(pyenv versions --bare 2>/dev/null | sort -rV); do
    p="$root/versions/$v/bin/python"
    [ -x "$p" ] && ok "$p" && { echo "$p"; exit 0; }
  done
fi
echo "no Python >= 3.12 found on PATH or in pyenv; install one (Harbor needs it)" >&2
exit 1
