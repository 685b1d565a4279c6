#!/usr/bin/env bash
# Re-vendors the browser libraries of den's embedded web UI into
# internal/web/static/vendor/ from the npm registry, at the versions pinned
# below. The page loads them as plain ES modules through an import map, so
# there is no Node build step: this script is the only place npm is used.
#
#   scripts/vendor-web.sh          rebuild internal/web/static/vendor/
#   scripts/vendor-web.sh --check  rebuild into a temp dir and compare it
#                                  byte for byte with the committed copy
#                                  (exit 1 naming the files that differ)
#
# It fetches each package with `npm pack` into a temp dir (no npm install,
# no node_modules, no package.json in the repo; npm's cache lives in the temp
# dir too), copies the ES-module builds under stable names, drops
# `sourceMappingURL` lines (no maps are shipped), copies each LICENSE into
# vendor/licenses/, and writes vendor/VERSIONS: "package version sha256 file"
# for every copied file. The vendor directory is owned by this script: files
# in it that the script does not produce are removed by a rebuild and
# reported by --check.
set -euo pipefail

PREACT_VERSION=10.29.8
HTM_VERSION=3.1.1
MARKED_VERSION=18.2.1
DOMPURIFY_VERSION=3.5.0
HLJS_VERSION=11.12.0          # @highlightjs/cdn-assets
XTERM_VERSION=6.0.0           # @xterm/xterm
XTERM_FIT_VERSION=0.11.0      # @xterm/addon-fit

# highlight.js grammars shipped (es/languages/NAME.min.js -> hljs/NAME.min.js).
# ini also highlights toml; xml also highlights html.
HLJS_LANGUAGES=(bash shell python javascript typescript json go rust c cpp java
  yaml ini xml css sql diff markdown dockerfile plaintext)

usage() {
  echo "usage: $0 [--check]" >&2
  exit 2
}

check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  -h|--help) usage ;;
  *) usage ;;
esac
[ $# -le 1 ] || usage

repo=$(cd "$(dirname "$0")/.." && pwd)
dest_rel=internal/web/static/vendor
dest="$repo/$dest_rel"

command -v npm >/dev/null || { echo "vendor-web: npm not found" >&2; exit 1; }

if command -v sha256sum >/dev/null; then
  sha256() { sha256sum "$1" | cut -d' ' -f1; }
else
  sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/den-vendor-web.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

out="$tmp/vendor"
mkdir -p "$out/hljs" "$out/licenses"
: >"$tmp/versions"

# Keep npm away from the repo and the user's home: its cache and logs go to
# the temp dir, and `npm pack` runs there (it writes the tarball to the cwd).
export npm_config_cache="$tmp/npm-cache"
export npm_config_update_notifier=false
export npm_config_fund=false
export npm_config_audit=false

# fetch PKG VERSION -> prints the dir the package was extracted to.
fetch() {
  local pkg=$1 version=$2 dir
  dir="$tmp/pkg/$(printf '%s' "$pkg" | tr '@/' '_-')"
  mkdir -p "$dir"
  (cd "$dir" && npm pack "$pkg@$version" --loglevel=error --ignore-scripts >/dev/null) || {
    echo "vendor-web: npm pack $pkg@$version failed" >&2
    return 1
  }
  local tgz=("$dir"/*.tgz)
  [ -f "${tgz[0]}" ] || { echo "vendor-web: no tarball for $pkg@$version" >&2; return 1; }
  mkdir -p "$dir/x"
  tar -xzf "${tgz[0]}" -C "$dir/x" --no-same-owner
  # npm tarballs hold one top-level folder, normally "package/".
  local top=("$dir"/x/*/)
  [ -d "${top[0]}" ] || { echo "vendor-web: empty tarball for $pkg@$version" >&2; return 1; }
  printf '%s\n' "${top[0]%/}"
}

# put NAME VERSION SRC DEST_REL: copy SRC to vendor/DEST_REL without
# sourceMappingURL lines, and record it for VERSIONS.
put() {
  local name=$1 version=$2 src=$3 rel=$4
  [ -f "$src" ] || { echo "vendor-web: $name@$version has no ${src#"$tmp"/pkg/}" >&2; return 1; }
  mkdir -p "$(dirname "$out/$rel")"
  if grep -Eq '^(//# sourceMappingURL=|/\*# sourceMappingURL=)' "$src"; then
    sed -E '/^(\/\/# sourceMappingURL=[^ ]*|\/\*# sourceMappingURL=[^ ]* \*\/)[[:space:]]*$/d' "$src" >"$out/$rel"
  else
    cp "$src" "$out/$rel"
  fi
  chmod 0644 "$out/$rel"
  printf '%s %s %s %s\n' "$name" "$version" "$(sha256 "$out/$rel")" "$rel" >>"$tmp/versions"
}

p=$(fetch preact "$PREACT_VERSION")
put preact "$PREACT_VERSION" "$p/dist/preact.module.js" preact.module.js
put preact "$PREACT_VERSION" "$p/hooks/dist/hooks.module.js" hooks.module.js  # imports "preact"
put preact "$PREACT_VERSION" "$p/LICENSE" licenses/preact.LICENSE

p=$(fetch htm "$HTM_VERSION")
put htm "$HTM_VERSION" "$p/dist/htm.module.js" htm.module.js
put htm "$HTM_VERSION" "$p/LICENSE" licenses/htm.LICENSE

p=$(fetch marked "$MARKED_VERSION")
put marked "$MARKED_VERSION" "$p/lib/marked.esm.js" marked.esm.js
put marked "$MARKED_VERSION" "$p/LICENSE" licenses/marked.LICENSE

p=$(fetch dompurify "$DOMPURIFY_VERSION")
put dompurify "$DOMPURIFY_VERSION" "$p/dist/purify.es.mjs" purify.es.mjs
# DOMPurify is (MPL-2.0 OR Apache-2.0): ship both texts.
put dompurify "$DOMPURIFY_VERSION" "$p/LICENSE" licenses/dompurify.LICENSE
put dompurify "$DOMPURIFY_VERSION" "$p/LICENSE-MPL" licenses/dompurify.LICENSE-MPL

p=$(fetch @highlightjs/cdn-assets "$HLJS_VERSION")
put highlight.js "$HLJS_VERSION" "$p/es/core.min.js" highlight.core.min.js
for lang in "${HLJS_LANGUAGES[@]}"; do
  put highlight.js "$HLJS_VERSION" "$p/es/languages/$lang.min.js" "hljs/$lang.min.js"
done
put highlight.js "$HLJS_VERSION" "$p/styles/github.min.css" hljs-light.css
put highlight.js "$HLJS_VERSION" "$p/styles/github-dark.min.css" hljs-dark.css
put highlight.js "$HLJS_VERSION" "$p/LICENSE" licenses/highlight.js.LICENSE

p=$(fetch @xterm/xterm "$XTERM_VERSION")
put xterm "$XTERM_VERSION" "$p/lib/xterm.mjs" xterm.mjs
put xterm "$XTERM_VERSION" "$p/css/xterm.css" xterm.css
put xterm "$XTERM_VERSION" "$p/LICENSE" licenses/xterm.LICENSE

p=$(fetch @xterm/addon-fit "$XTERM_FIT_VERSION")
put xterm-addon-fit "$XTERM_FIT_VERSION" "$p/lib/addon-fit.mjs" addon-fit.mjs
put xterm-addon-fit "$XTERM_FIT_VERSION" "$p/LICENSE" licenses/xterm-addon-fit.LICENSE

{
  echo "# Written by scripts/vendor-web.sh; do not edit. Verify: scripts/vendor-web.sh --check"
  echo "# package version sha256 file"
  LC_ALL=C sort -k1,1 -k4,4 "$tmp/versions"
} >"$out/VERSIONS"
chmod 0644 "$out/VERSIONS"

if [ "$check" = 1 ]; then
  if [ ! -d "$dest" ]; then
    echo "vendor-web: $dest_rel is missing; run scripts/vendor-web.sh" >&2
    exit 1
  fi
  if diff -r "$out" "$dest" >"$tmp/diff" 2>&1; then
    echo "vendor-web: $dest_rel matches the pinned versions"
    exit 0
  fi
  echo "vendor-web: $dest_rel differs from what scripts/vendor-web.sh produces:" >&2
  (cd "$out" && find . -type f | sed 's|^\./||') | LC_ALL=C sort >"$tmp/want"
  (cd "$dest" && find . -type f | sed 's|^\./||') | LC_ALL=C sort >"$tmp/have"
  LC_ALL=C comm -23 "$tmp/want" "$tmp/have" | sed "s|^|  missing:    $dest_rel/|" >&2
  LC_ALL=C comm -13 "$tmp/want" "$tmp/have" | sed "s|^|  unexpected: $dest_rel/|" >&2
  LC_ALL=C comm -12 "$tmp/want" "$tmp/have" | while IFS= read -r f; do
    cmp -s "$out/$f" "$dest/$f" || echo "  modified:   $dest_rel/$f"
  done >&2
  echo "run scripts/vendor-web.sh to re-vendor (or fix the pins)" >&2
  exit 1
fi

# Replace the committed copy only once everything was fetched.
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.new"
cp -R "$out" "$dest.new"
rm -rf "$dest"
mv "$dest.new" "$dest"
echo "vendor-web: wrote $dest_rel ($(grep -vc '^#' "$dest/VERSIONS") files)"
