#!/usr/bin/env bash
# Builds the Dockerfile into a local image with podman (no Docker engine needed) and prints its size.
#
#   hack/build-image.sh [TAG]                      TAG defaults to localhost/fleetsched:dev
#   hack/build-image.sh --run [OPTIONS] TAG [ARGS]  `podman run --rm` with the flags this sandbox needs
#
# The Dockerfile's base is a build argument (PYTHON_IMAGE, default python:3.11-slim-bookworm). When
# that registry is reachable it is used as is. When it is not (this project's machines reach Debian's
# archive and PyPI, not a container registry), the base is made locally: mmdebstrap writes a minimal
# Debian bookworm root (the release of the pinned base) with python3, venv and python-is-python3, so
# that `python -m venv`, groupadd and useradd behave as on the python image (Python 3.11 as there,
# under /usr/bin instead of /usr/local/bin; the Dockerfile names no path of the base's Python). That
# root is imported as localhost/fleetsched-base:bookworm-N and passed as PYTHON_IMAGE: the one
# Dockerfile builds both ways, nothing is rewritten. FLEETSCHED_IMAGE_BASE=IMAGE picks a base outright.
#
# How it runs in a sandbox without a container engine: podman runs every RUN step with
# `--isolation chroot` (no user namespace, no cgroup, no network namespace: the host's network, so pip
# reaches PyPI as the host does). The podman storage and the base root are cached under
# $FLEETSCHED_CACHE_DIR, so a second run reuses the base and every unchanged layer. Set
# FLEETSCHED_IMAGE_STORAGE_DRIVER=vfs where the kernel refuses overlay mounts (slower, bigger;
# overlay works on this project's machines, vfs has not been tried here).
#
# Running it here (--run) takes runc, not crun: crun refuses this machine's hybrid cgroup layout
# ("cgroups in hybrid mode not supported") and runc cannot run with --cgroups disabled, so the
# container gets cgroupfs-managed cgroups; and the container's rlimits are set to values the sandbox
# lets a process raise (podman's default nofile/nproc limits are refused with EPERM).
#
# Installs what it needs from Debian (podman, runc, mmdebstrap) when missing. The last line printed is the
# image's tag; the line before it its size.
set -euo pipefail
cd "$(dirname "$0")/.."

tag="${1:-localhost/fleetsched:dev}"
export FLEETSCHED_CACHE_DIR="${FLEETSCHED_CACHE_DIR:-$HOME/.cache/fleetsched}"
cache="$FLEETSCHED_CACHE_DIR/image"
mkdir -p "$cache"

missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Everything podman keeps (layers, the base) lives in the cache; the run root is per boot.
storage_driver="${FLEETSCHED_IMAGE_STORAGE_DRIVER:-overlay}"
podman_flags=(--root "$cache/storage" --runroot "${XDG_RUNTIME_DIR:-/tmp}/fleetsched-podman-run"
  --storage-driver "$storage_driver" --cgroup-manager cgroupfs --events-backend none)
podman() { command podman "${podman_flags[@]}" "$@"; }

if [ "${1:-}" = "--run" ]; then
  shift
  [ $# -ge 1 ] || { echo "usage: $0 --run [PODMAN-RUN-OPTIONS] TAG [ARGS]" >&2; exit 2; }
  exec "$(command -v podman)" "${podman_flags[@]}" --runtime runc run --rm \
    --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "$@"
fi

pinned="$(sed -n 's/^ARG PYTHON_IMAGE=//p' Dockerfile)"
base="${FLEETSCHED_IMAGE_BASE:-}"
if [ -z "$base" ]; then
  if podman pull -q "docker.io/library/$pinned" >/dev/null 2>&1; then
    base="docker.io/library/$pinned"
  else
    # Bump the key when the package list changes; mmdebstrap reads the host's apt sources, which
    # name a dated snapshot, so the root is as reproducible as the host's archive.
    base="localhost/fleetsched-base:bookworm-3"
    if ! podman image exists "$base"; then
      echo "registry unreachable: making a Debian bookworm root with mmdebstrap for $base" >&2
      root_tar="$cache/${base##*:}-python3.tar"
      if [ ! -s "$root_tar" ]; then
        # No documentation, manual pages or translations (as Debian's own slim images), except the
        # copyright files. The merged-usr hook lays out /usr itself: otherwise mmdebstrap installs the
        # usrmerge package, which pulls in perl (47 MB).
        mmdebstrap --variant=minbase --mode=root --format=tar --quiet \
          --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
          --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
          --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
          --dpkgopt='path-exclude=/usr/share/locale/*' \
          --include=python3,python3-venv,python-is-python3,ca-certificates \
          --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
          bookworm "$root_tar.tmp"
        mv "$root_tar.tmp" "$root_tar"
      fi
      podman import --change 'CMD ["python3"]' "$root_tar" "$base" >/dev/null
    fi
  fi
fi

# pip inside the build trusts what pip on this host trusts: a host whose HTTPS goes through an
# intercepting proxy names its CA bundle in PIP_CERT or pip.conf. Both are bind-mounted into the RUN
# steps only (a build volume is not part of any layer), so the image stays the same.
volumes=()
cert="${PIP_CERT:-$(python3 -m pip config get global.cert 2>/dev/null || true)}"
if [ -n "$cert" ] && [ -f "$cert" ]; then
  printf '[global]\ncert = /run/fleetsched-build-ca.crt\n' >"$cache/pip.conf"
  volumes+=(-v "$cert:/run/fleetsched-build-ca.crt:ro" -v "$cache/pip.conf:/etc/pip.conf:ro")
fi

previous="$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
start=$SECONDS
podman build --isolation chroot --layers "${volumes[@]}" --build-arg "PYTHON_IMAGE=$base" \
  -t "$tag" -f Dockerfile . >&2
echo "built $tag from $base in $((SECONDS - start)) s" >&2
# The cache keeps the layers a rebuild reuses, not every image ever built: the one this build replaced
# goes (its last layer holds a whole copy of the virtualenv).
if [ -n "$previous" ] && [ "$previous" != "$(podman image inspect --format '{{.Id}}' "$tag")" ]; then
  podman rmi --force "$previous" >/dev/null 2>&1 || true
fi
size=$(podman image inspect --format '{{.Size}}' "$tag")
echo "size: $((size / 1000000)) MB"
echo "$tag"
