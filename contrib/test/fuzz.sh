#!/usr/bin/env bash
# Short runs of every fuzz target (`go test -fuzz`), as `make test` does:
# FUZZTIME each (default 3s). Each run starts from the target's seeds and
# the corpus kept in its package's testdata/fuzz/<target>/ (which plain
# `go test` replays too), not from Go's cache of earlier runs; a failing
# input lands in testdata, to be kept.
#
# FUZZ_SAVE=1 also keeps what the runs found: inputs of Go's cache corpus
# ($GOCACHE/fuzz/...), of sizes spread from the smallest to 4 KiB, go to
# testdata/fuzz/<target>/ until it holds FUZZ_KEEP files (default 24). This
# is how the kept corpus was made (FUZZTIME=20s FUZZ_SAVE=1).
set -euo pipefail
cd "$(dirname "$0")/../.."
TAGS="exclude_graphdriver_btrfs exclude_graphdriver_zfs containers_image_openpgp"
FUZZTIME=${FUZZTIME:-3s}
FUZZ_KEEP=${FUZZ_KEEP:-24}
cache=$(go env GOCACHE)/fuzz
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# spread passes $1 of its input lines, evenly spaced (all when fewer): the
# sizes of the inputs kept range from the smallest to the largest.
spread() {
	awk -v k="$1" '{ l[NR] = $0 } END {
		if (k <= 0) exit
		if (NR <= k) { for (i = 1; i <= NR; i++) print l[i]; exit }
		for (j = 0; j < k; j++) print l[1 + int(j * (NR - 1) / (k - 1 > 0 ? k - 1 : 1))]
	}'
}

# save keeps up to FUZZ_KEEP small inputs of the cache corpus of target $2
# of package $1 in the package's testdata.
save() {
	local src dst have f added=()
	src=$cache/$(go list -tags "$TAGS" "$1")/$2
	dst=$1/testdata/fuzz/$2
	[ -d "$src" ] || return 0
	mkdir -p "$dst"
	have=$(find "$dst" -type f | wc -l)
	while read -r _ f; do
		[ "$have" -ge "$FUZZ_KEEP" ] && break
		[ -e "$dst/$(basename "$f")" ] && continue
		cp "$f" "$dst/"
		added+=("$dst/$(basename "$f")")
		have=$((have + 1))
	done < <(find "$src" -type f -size -4097c -printf '%s %p\n' | sort -n | spread "$((FUZZ_KEEP - have))")
	# The cache may hold inputs of an older signature of the target: keep
	# the new inputs only if `go test` replays them.
	if [ ${#added[@]} -gt 0 ] && ! go test -tags "$TAGS" -count=1 -run "^$2\$" "$1" >"$log" 2>&1; then
		rm -f "${added[@]}"
		echo "  the cache's inputs do not replay; none kept:"
		tail -5 "$log"
		return 0
	fi
	echo "  kept $have inputs in $dst"
}

n=0
while IFS=: read -r file name; do
	pkg=./$(dirname "$file")
	echo "fuzz $pkg $name ($FUZZTIME)"
	# Only the seeds and the kept corpus: Go's cache corpus of earlier runs
	# would grow, and every input is run before fuzzing starts; a run whose
	# corpus outgrew FUZZTIME fails with "context deadline exceeded".
	rm -rf "${cache:?}/$(go list -tags "$TAGS" "$pkg")/$name"
	fuzz() { go test -tags "$TAGS" -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -parallel 2 "$pkg" >"$log" 2>&1; }
	if ! fuzz; then
		# go test's coordinator also gives up on a worker that is slow to
		# stop on a loaded machine ("context deadline exceeded", no failing
		# input): that is not a finding; run the target once more.
		if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input\|testdata/fuzz/' "$log"; then
			echo "  the fuzzing run timed out stopping a worker; again"
			fuzz || { cat "$log"; exit 1; }
		else
			cat "$log"
			exit 1
		fi
	fi
	if [ "${FUZZ_SAVE:-}" = 1 ]; then
		save "$pkg" "$name"
	fi
	n=$((n + 1))
done < <(grep -rho --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sort -u | while read -r _ fn; do
	grep -rl --include='*_test.go' "^func $fn(" . | sed "s|^\./||;s|\$|:$fn|"
done)
echo "fuzz: $n targets ran without a failure"
