#!/usr/bin/env bash
# exec.sh measures the whole-process cost of `den exec -- true` (den's
# own start, the computer's start, one fresh process, the shutdown)
# against a plain `sh -c true`, with hyperfine, on a throwaway busybox
# computer. It builds den from this checkout and touches nothing
# outside its temporary folder.
#
#	bench/exec.sh            30 runs each
#	RUNS=100 bench/exec.sh   more runs
set -euo pipefail

if ! command -v hyperfine >/dev/null 2>&1; then
	echo "exec.sh: hyperfine not found: install the Debian package hyperfine" >&2
	exit 1
fi

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/den-bench.XXXXXX")
cleanup() {
	# A computer's rootfs may hold read-only folders.
	chmod -R u+w "$tmp" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

(cd "$root" && go build -o "$tmp/den" ./cmd/den)
export DEN_HOME="$tmp/home"
# Provision the computer once, so that the runs measure only its start.
"$tmp/den" exec --rootfs busybox -- true 2>&1

hyperfine -N --warmup 3 --runs "${RUNS:-30}" --export-json "$tmp/result.json" \
	'sh -c true' "$tmp/den exec -- true"

# hyperfine's summary gives means; the medians are in its JSON.
echo
awk -F'": ' '
	/"command":/ { c = $2; sub(/",?$/, "", c); sub(/^"/, "", c) }
	/"median":/  { m = $2; sub(/,$/, "", m); printf "median %8.2f ms  %s\n", m * 1000, c }
' "$tmp/result.json"
