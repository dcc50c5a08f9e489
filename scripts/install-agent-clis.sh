#!/usr/bin/env bash
# Install the pinned agent CLIs (codex, claude-code, opencode) from the npm registry into one cached folder
# (one folder per pinned set, reused between runs) and print that folder. Its node_modules/.bin holds
# `codex`, `claude` and `opencode`, so it can be handed to a run as a tools folder.
# Safe to run concurrently (pytest-xdist workers): a file lock, and a folder counts only once complete.
# Usage: install-agent-clis.sh [PKG@VERSION ...]   (default: the pinned set below)
set -euo pipefail
PINNED=(@openai/codex@0.171.0 @anthropic-ai/claude-code@2.1.332 opencode-ai@1.18.33)
CACHE=${SKILLEVAL_AGENT_CLI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pytest-skilleval/agent-clis}
command -v npm >/dev/null || { echo "npm not found: install Node.js and npm (apt-get install nodejs npm)" >&2; exit 3; }
[ $# -gt 0 ] || set -- "${PINNED[@]}"
name=$(printf '%s\n' "$@" | sort | sed 's/^@//; s|/|-|g; s/@/-/' | paste -sd_)
dir="$CACHE/$name"
if [ ! -e "$dir/.complete" ]; then
  mkdir -p "$CACHE"
  exec 9>"$dir.lock"
  flock 9
  if [ ! -e "$dir/.complete" ]; then
    echo "npm: installing $* into $dir" >&2
    rm -rf "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$@" >&2
    touch "$dir/.complete"
  fi
fi
echo "$dir"
