#!/usr/bin/env bash
# Builds the docker CLI plugins of the BuildKit tests (integration/
# buildkit_test.go), run as root by setup-root.sh: buildx and compose v5 from
# the Go module proxy at pinned versions, into $HUTCH_TEST_CLI_PLUGINS
# (default /usr/local/share/hutch-test/cli-plugins). That is no default
# plugin directory of the docker CLI on purpose: with buildx found, the CLI
# sends every `docker build` to BuildKit, and the classic builder's tests
# expect the classic builder. The BuildKit tests name the directory in
# their DOCKER_CONFIG's cliPluginsExtraDirs.
#
# Each one is built inside its own module, so that the module's go.mod
# (compose's exclude directives, which `go install mod@version` refuses;
# replaces) applies as in upstream's builds, with upstream's flags. A
# plugin already reporting its pinned version is not built again.
set -euo pipefail
export PATH=/usr/local/go/bin:$PATH GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false
DIR=${HUTCH_TEST_CLI_PLUGINS:-/usr/local/share/hutch-test/cli-plugins}

# plugin, module, version, main package, variable the version is linked into.
PLUGINS=(
	"docker-buildx github.com/docker/buildx v0.38.2 ./cmd/buildx github.com/docker/buildx/version.Version"
	"docker-compose github.com/docker/compose/v5 v5.6.0 ./cmd github.com/docker/compose/v5/internal.Version"
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
install -d -m 755 "$(dirname "$DIR")" "$DIR"

for p in "${PLUGINS[@]}"; do
	read -r name mod ver pkg var <<<"$p"
	# Every CLI plugin answers docker-cli-plugin-metadata with its version.
	if [ -x "$DIR/$name" ] && "$DIR/$name" docker-cli-plugin-metadata 2>/dev/null | grep -q "\"Version\": *\"$ver\""; then
		continue
	fi
	echo "setup: building $name from $mod@$ver into $DIR"
	src=$(cd "$tmp" && go mod download -json "$mod@$ver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	[ -d "$src" ] || { echo "setup: go mod download $mod@$ver gave no source directory" >&2; exit 1; }
	# The module cache is read-only; the build may write (go.sum) in a copy.
	cp -r "$src" "$tmp/$name"
	chmod -R u+w "$tmp/$name"
	(cd "$tmp/$name" && go build -trimpath -ldflags "-s -w -X $var=$ver" -o "$tmp/$name.bin" "$pkg")
	install -m 755 "$tmp/$name.bin" "$DIR/.$name.new"
	mv -f "$DIR/.$name.new" "$DIR/$name"
done
echo "setup: CLI plugins in $DIR: $("$DIR/docker-buildx" version) / $("$DIR/docker-compose" version)"
