#!/usr/bin/env bash
# `make test`: unit tests, then the integration tests against the real daemon
# run as an unprivileged user. As root, the machine is prepared first and the
# tests run as the test user; as an ordinary user, they run as that user, on
# a machine root prepared once with `HUTCH_TEST_USER=<user> bash
# contrib/test/setup-root.sh`: the Debian packages, subuid/subgid ranges,
# /dev/net/tun, and the small file system the full-disk test fills
# (/var/tmp/hutch-small, or $HUTCH_SMALL_FS). A test whose requirement is
# missing fails and says what to run; none is skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/go/bin:$PATH
TAGS="exclude_graphdriver_btrfs exclude_graphdriver_zfs containers_image_openpgp"
. contrib/test/as_user.sh

if [ "$(id -u)" = 0 ]; then
	bash contrib/test/setup-root.sh
fi

echo "== build"
make build

# Test binaries live where the test user can read them.
out=$(mktemp -d /tmp/hutch-test.XXXXXX)
chmod 755 "$out"
trap 'rm -rf "$out"' EXIT
cp bin/hutch* "$out/"
go test -c -tags "$TAGS integration" -o "$out/integration.test" ./integration/
if [ "$(id -u)" = 0 ]; then
	go test -c -tags "$TAGS integration rootmode" -o "$out/rootmode.test" ./integration/
fi
chmod -R a+rX "$out"

echo "== format and vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt needed:"; echo "$unformatted"; exit 1
fi
go vet -tags "$TAGS" ./...
go vet -tags "$TAGS integration" ./integration/
go vet -tags "$TAGS seccomp" ./engine/shim/oci/... ./cmd/hutch-runtime

echo "== unit tests"
go test -tags "$TAGS" -count=1 ./...
# hutch-runtime's packages as make build builds them, with runc's seccomp
# support (libseccomp).
go test -tags "$TAGS seccomp" -count=1 ./engine/shim/oci/...

echo "== fuzz (short runs of every target)"
bash contrib/test/fuzz.sh

echo "== make install and make uninstall"
bash contrib/test/install.sh

echo "== integration tests (as $(as_user id -un), uid $(as_user id -u))"
(cd "$out" && as_user env HUTCH_BIN="$out/hutch" HUTCH_SHIM="$out/hutch-shim" \
	"$out/integration.test" -test.v -test.count=1 -test.timeout=35m)

if [ -e "$out/rootmode.test" ]; then
	echo "== integration tests as real root"
	(cd "$out" && HUTCH_BIN="$out/hutch" HUTCH_SHIM="$out/hutch-shim" \
		"$out/rootmode.test" -test.v -test.count=1 -test.run '^TestRootMode' -test.timeout=10m)
fi
