#!/usr/bin/env bash
# The team's verifier for notes-1-2: run from the workspace; exit 0 means the release notes are acceptable.
set -e
notes=output/RELEASE_NOTES.md
test -f "$notes"
grep -q '^# Release 1\.2' "$notes"
grep -q '^## Fixes' "$notes"
! grep -qi 'TODO' "$notes"
