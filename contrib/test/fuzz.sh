#!/usr/bin/env bash
# Short runs of every fuzz target (`go test -fuzz`), as `make test` does:
# FUZZTIME each (default 3s). New failing inputs land in the packages'
# testdata/fuzz corpus, which is kept in the repository.
set -euo pipefail
cd "$(dirname "$0")/../.."
TAGS="exclude_graphdriver_btrfs exclude_graphdriver_zfs containers_image_openpgp"
FUZZTIME=${FUZZTIME:-3s}
n=0
while IFS=: read -r file name; do
	pkg=./$(dirname "$file")
	echo "fuzz $pkg $name ($FUZZTIME)"
	go test -tags "$TAGS" -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -parallel 2 "$pkg" >/tmp/hutch-fuzz.log 2>&1 || {
		cat /tmp/hutch-fuzz.log
		exit 1
	}
	n=$((n + 1))
done < <(grep -rho --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sort -u | while read -r _ fn; do
	grep -rl --include='*_test.go' "^func $fn(" . | head -1 | sed "s|^\./||;s|\$|:$fn|"
done)
echo "fuzz: $n targets ran without a failure"
