#!/usr/bin/env bash
# `make install` and `make uninstall` for real, into a staging DESTDIR:
# install puts exactly hutch's eight binaries in $DESTDIR$PREFIX/bin; the
# installed hutch, started as the test user with none of the HUTCH_*
# variables that point tests at their binaries, finds its helpers beside
# itself and runs a container; uninstall leaves no file behind.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/go/bin:$PATH
TAGS="exclude_graphdriver_btrfs exclude_graphdriver_zfs containers_image_openpgp"
. contrib/test/as_user.sh

stage=$(mktemp -d /tmp/hutch-install.XXXXXX)
chmod 755 "$stage"
daemon=
stop() { kill "$(cat "$stage/home/run/hutch/hutch.pid")" && wait "$daemon"; }
cleanup() {
	if [ -n "$daemon" ]; then stop || true; fi
	# Image layers hold files of the user's subuid range.
	if [ -d "$stage/home" ]; then as_user unshare --map-auto --map-root-user sh -c 'rm -rf "$1"/*' _ "$stage/home" || true; fi
	rm -rf "$stage"
}
trap cleanup EXIT
fail() { echo "install: $*" >&2; exit 1; }

make install DESTDIR="$stage/dest" PREFIX=/usr/local >/dev/null
bin="$stage/dest/usr/local/bin"
got=$(cd "$stage/dest" && find . -not -type d | sort | tr '\n' ' ')
want="./usr/local/bin/hutch ./usr/local/bin/hutch-buildkit ./usr/local/bin/hutch-init ./usr/local/bin/hutch-keeper ./usr/local/bin/hutch-ns ./usr/local/bin/hutch-runtime ./usr/local/bin/hutch-shim ./usr/local/bin/hutch-swarm "
[ "$got" = "$want" ] || fail "make install put [$got], want [$want]"
for b in "$bin"/*; do [ -x "$b" ] || fail "$b is not executable"; done

# The installed daemon, as the test user, in directories of its own.
go build -tags "$TAGS" -o "$stage/mkimage" ./contrib/mkimage
"$stage/mkimage" -o "$stage/busybox.tar" -tag busybox:latest >/dev/null
mkdir -m 0755 "$stage/home"
chown "$TEST_USER" "$stage/home" 2>/dev/null || true
chmod -R a+rX "$stage"
home="$stage/home"
run() {
	as_user env XDG_RUNTIME_DIR="$home/run" XDG_DATA_HOME="$home/data" XDG_CONFIG_HOME="$home/config" \
		DOCKER_HOST="unix://$home/run/hutch.sock" DOCKER_CONFIG="$home/docker" "$@"
}
run mkdir -m 0700 -p "$home/run" "$home/data" "$home/config"
run "$bin/hutch" daemon >"$stage/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 300); do run docker version >/dev/null 2>&1 && break; sleep 0.1; done
run docker version >/dev/null || { cat "$stage/daemon.log"; fail "the installed daemon does not answer"; }
run docker load -i "$stage/busybox.tar" >/dev/null
out=$(run docker run --rm --init busybox echo installed) || { cat "$stage/daemon.log"; fail "docker run on the installed daemon"; }
[ "$out" = installed ] || fail "docker run printed [$out]"
stop || fail "the installed daemon did not stop cleanly: $(cat "$stage/daemon.log")"
daemon=

make uninstall DESTDIR="$stage/dest" PREFIX=/usr/local >/dev/null
left=$(cd "$stage/dest" && find . -mindepth 1 -not -type d)
[ -z "$left" ] || fail "make uninstall left $left"
[ ! -e "$bin" ] || fail "make uninstall left the empty $bin"
echo "install: make install, the installed daemon and make uninstall work"
