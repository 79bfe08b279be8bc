#!/usr/bin/env bash
# `make bench`: builds hutch and the benchmark program (contrib/bench) and
# runs it as an unprivileged user, as `make test` runs the integration
# tests. As root, the machine is prepared first (contrib/test/setup-root.sh)
# and the program runs as the test user; as an ordinary user, it runs as
# that user. Arguments go to the program (e.g. -runs 60, -only seed,docker).
# The build phase's baseline comes from contrib/test/buildkitd.sh, which
# runs here as root; as an ordinary user, run it as root first.
# Results: a table on stdout, bench/results/latest.json and latency.png.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/go/bin:$PATH
TAGS="exclude_graphdriver_btrfs exclude_graphdriver_zfs containers_image_openpgp"
BENCH_USER=${HUTCH_TEST_USER:-hutchtest}

if [ "$(id -u)" = 0 ]; then
	bash contrib/test/setup-root.sh
	# The build phase's baseline: BuildKit's buildkitd and buildctl at
	# go.mod's version, and rootlesskit (built once, minutes).
	bash contrib/test/buildkitd.sh
fi

echo "== build"
make build

# The binaries live where the bench user can read them, in a directory
# that does not contain the daemon's state (libcontainer would copy the
# shim binary on every start otherwise).
out=$(mktemp -d /tmp/hutch-bench.XXXXXX)
chmod 755 "$out"
# The sync after the removal: ext4 without a journal passes over freed
# inodes for six minutes while their inode tables are unwritten, and this
# frees some 120 000 (contrib/bench/env.go).
trap 'rm -rf "$out"; sync' EXIT
mkdir "$out/bin" "$out/results"
cp bin/hutch* "$out/bin/"
go build -tags "$TAGS" -o "$out/bin/bench" ./contrib/bench
# The build phase's client of hutch, built as contrib/test/buildkitd.sh
# builds buildctl (static, stripped), so that both clients start alike.
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/bin/bkctl" ./contrib/bench/bkctl
chmod -R a+rX "$out"

args=(-hutch "$out/bin/hutch" -results "$out/results")
if [ "$(id -u)" = 0 ]; then
	# The scratch directory is under $out so that the trap removes it,
	# image layers with the subuid range's files included.
	mkdir "$out/work"
	chown "$BENCH_USER" "$out/work" "$out/results"
	args+=(-work "$out/work")
	echo "== bench (as $BENCH_USER, uid $(id -u "$BENCH_USER"); load $(cut -d' ' -f1-3 /proc/loadavg))"
	(cd "$out" && runuser -u "$BENCH_USER" -- env -i HOME="$(getent passwd "$BENCH_USER" | cut -d: -f6)" \
		USER="$BENCH_USER" PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin TMPDIR=/tmp \
		"$out/bin/bench" "${args[@]}" "$@")
else
	echo "== bench (as $(id -un); load $(cut -d' ' -f1-3 /proc/loadavg))"
	"$out/bin/bench" "${args[@]}" "$@"
fi

mkdir -p bench/results
cp "$out/results/latest.json" bench/results/
# A run without latency figures (-only memory, -only net) draws no plot.
if [ -e "$out/results/latency.png" ]; then
	cp "$out/results/latency.png" bench/results/
fi
echo "== results in bench/results/ (latest.json, latency.png)"
