#!/usr/bin/env bash
# Build the offline base image the Docker tests use (no image registry is reachable): a minimal Debian
# made with debootstrap, imported into Docker. Cached: a no-op when the image with this recipe exists.
# Prints the image name on stdout; exit status 3 when debootstrap is missing and SKILLEVAL_NO_INSTALL is set.
# The tag carries RECIPE: bump it when PACKAGES change so old caches are not reused.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PACKAGES=${SKILLEVAL_TEST_IMAGE_PACKAGES:-bash,python3,tmux,ca-certificates}
RECIPE=1
IMAGE=${SKILLEVAL_TEST_IMAGE:-skilleval-test-base:bookworm-r$RECIPE}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

exists() { docker image inspect "$IMAGE" >/dev/null 2>&1; }
exists && { echo "$IMAGE"; exit 0; }

# One builder at a time (pytest-xdist workers may ask together); the rest wait and reuse its image.
exec 9>"${TMPDIR:-/tmp}/skilleval-test-image.lock"
flock 9
exists && { echo "$IMAGE"; exit 0; }

if ! command -v debootstrap >/dev/null; then
  # The test setup sets SKILLEVAL_NO_INSTALL: it may build images but never installs system packages.
  [ -z "${SKILLEVAL_NO_INSTALL:-}" ] || { echo "debootstrap not found: apt-get install debootstrap" >&2; exit 3; }
  "$here/apt-ensure.sh" debootstrap
fi
root=$(mktemp -d /var/tmp/skilleval-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "building $IMAGE with debootstrap ($PACKAGES)" >&2
debootstrap --variant=minbase --include="$PACKAGES" bookworm "$root" "$MIRROR" >"$root.log" 2>&1 \
  || { tail -30 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | docker import \
  --change 'CMD ["bash"]' --change 'ENV LANG=C.UTF-8' \
  --change "LABEL org.skilleval.test-base=$RECIPE" \
  - "$IMAGE" >/dev/null
echo "$IMAGE"
