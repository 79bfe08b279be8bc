#!/usr/bin/env bash
# Builds the baseline of the bench's build phase (contrib/bench/build.go),
# run as root by contrib/bench/run.sh: BuildKit's own buildkitd and buildctl
# at the version hutch embeds (go.mod's github.com/moby/buildkit), and
# rootlesskit, which runs buildkitd rootless as BuildKit's docs/rootless.md
# says, at go.mod's github.com/rootless-containers/rootlesskit/v3, all from
# the Go module proxy, into $HUTCH_TEST_BUILDKIT (default
# /usr/local/share/hutch-test/buildkit). runc is Debian's (setup-root.sh).
#
# As contrib/test/clients.sh builds buildx: each inside its own module, so
# that the module's go.mod applies, with upstream's tags and version flags
# (BuildKit's Dockerfile: CGO_ENABLED=0, "osusergo netgo static_build
# seccomp" for buildkitd). A binary already reporting its version is not
# built again.
set -euo pipefail
export PATH=/usr/local/go/bin:$PATH GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false
DIR=${HUTCH_TEST_BUILDKIT:-/usr/local/share/hutch-test/buildkit}
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"

# The versions go.mod requires, so that the baseline is the BuildKit hutch
# links.
modver() { awk -v m="$1" '$1 == m { print $2; exit }' "$ROOT/go.mod"; }
BK_VER=$(modver github.com/moby/buildkit)
RK_VER=$(modver github.com/rootless-containers/rootlesskit/v3)
[ -n "$BK_VER" ] && [ -n "$RK_VER" ] || { echo "setup: go.mod names no buildkit or rootlesskit/v3 version" >&2; exit 1; }
BK_LD="-s -w -X github.com/moby/buildkit/version.Version=$BK_VER -X github.com/moby/buildkit/version.Revision=$BK_VER -X github.com/moby/buildkit/version.Package=github.com/moby/buildkit"

# binary, module, version, main package, tags, ldflags, what --version
# prints when it is that version.
BINS=(
	"buildkitd|github.com/moby/buildkit|$BK_VER|./cmd/buildkitd|osusergo netgo static_build seccomp|$BK_LD|github.com/moby/buildkit $BK_VER"
	"buildctl|github.com/moby/buildkit|$BK_VER|./cmd/buildctl||$BK_LD|github.com/moby/buildkit $BK_VER"
	"rootlesskit|github.com/rootless-containers/rootlesskit/v3|$RK_VER|./cmd/rootlesskit||-s -w|version ${RK_VER#v}"
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
install -d -m 755 "$(dirname "$DIR")" "$DIR"

declare -A srcs=()
n=0
for b in "${BINS[@]}"; do
	IFS='|' read -r name mod ver pkg tags ldflags want <<<"$b"
	if [ -x "$DIR/$name" ] && "$DIR/$name" --version 2>/dev/null | grep -qF "$want"; then
		continue
	fi
	echo "setup: building $name from $mod@$ver into $DIR"
	key="$mod@$ver"
	if [ -z "${srcs[$key]:-}" ]; then
		src=$(cd "$tmp" && go mod download -json "$key" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
		[ -d "$src" ] || { echo "setup: go mod download $key gave no source directory" >&2; exit 1; }
		# The module cache is read-only; the build may write (go.sum) in a copy.
		n=$((n + 1))
		copy="$tmp/src-$n"
		cp -r "$src" "$copy"
		chmod -R u+w "$copy"
		srcs[$key]=$copy
	fi
	(cd "${srcs[$key]}" && go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$tmp/$name.bin" "$pkg")
	install -m 755 "$tmp/$name.bin" "$DIR/.$name.new"
	mv -f "$DIR/.$name.new" "$DIR/$name"
done
echo "setup: BuildKit baseline in $DIR: $("$DIR/buildkitd" --version) / $("$DIR/rootlesskit" --version)"
