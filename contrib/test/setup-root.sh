#!/usr/bin/env bash
# Prepares a fresh Debian machine for hutch's tests (run as root): the Debian
# packages the tests use, the npm packages of the Node clients' tests, the
# docker CLI plugins of the BuildKit tests (clients.sh), an unprivileged
# test user with subuid/subgid ranges, a /dev/net/tun that user
# may open (for slirp4netns), a small file system the user owns (for the
# full-disk test), and a non-loopback address on lo (for the source-address
# test).
set -euo pipefail
TEST_USER=${HUTCH_TEST_USER:-hutchtest}
PKGS=(libseccomp-dev pkg-config musl-tools uidmap slirp4netns systemd fuse-overlayfs busybox-static docker-registry iproute2 runc curl util-linux apache2-utils tmux nftables iperf3 isal procps git openssh-client python3-docker docker-compose)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm for the Node clients' tests: Debian's (node 18) unless a
# node with its npm is already there (NodeSource's bundles npm, and
# conflicts with Debian's npm package).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	missing+=(nodejs npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The Debian registry and iperf3 packages may start system services we do
# not use.
systemctl disable --now docker-registry >/dev/null 2>&1 || true
systemctl disable --now iperf3 >/dev/null 2>&1 || true

# The npm packages of TestDockerode and TestTestcontainersNode, exactly as
# integration/testdata/node/package-lock.json pins them, where the test
# user can read them (installed again when the lock changes). No install
# scripts, no optional packages: nothing is compiled.
NODE_DIR=${HUTCH_TEST_NODE_DIR:-/usr/local/share/hutch-test/node}
node_src="$(cd "$(dirname "$0")/../.." && pwd)/integration/testdata/node"
if ! cmp -s "$node_src/package-lock.json" "$NODE_DIR/package-lock.json"; then
	echo "setup: npm ci of $node_src into $NODE_DIR"
	node_tmp=$(mktemp -d)
	cp "$node_src/package.json" "$node_src/package-lock.json" "$node_tmp/"
	(cd "$node_tmp" && npm ci --ignore-scripts --omit=optional --no-audit --no-fund --loglevel=error >/dev/null)
	rm -rf "$NODE_DIR"
	mkdir -p "$(dirname "$NODE_DIR")"
	mv "$node_tmp" "$NODE_DIR"
	chmod -R a+rX "$NODE_DIR"
fi

# buildx and compose v5, built at pinned versions from the Go module proxy
# into a directory of their own (not one the docker CLI looks in unasked).
bash "$(dirname "$0")/clients.sh"

if ! id "$TEST_USER" >/dev/null 2>&1; then
	useradd --create-home --shell /bin/bash "$TEST_USER"
fi
uid=$(id -u "$TEST_USER")
for f in /etc/subuid /etc/subgid; do
	touch "$f"
	grep -q "^$TEST_USER:" "$f" || echo "$TEST_USER:$((100000 + (uid % 1000) * 65536)):65536" >>"$f"
done
chmod 666 /dev/net/tun
# Published ports keep a non-loopback client's address: the test connects
# from and to this address (TEST-NET-2, RFC 5737), which lives on lo so that
# its traffic never leaves the machine (no dummy interfaces on every kernel).
SOURCE_ADDR=198.51.100.1
ip -4 -o addr show dev lo | grep -q "inet $SOURCE_ADDR/" || ip addr add "$SOURCE_ADDR/32" dev lo
[ -e /dev/fuse ] && chmod 666 /dev/fuse || true
# A small file system of the test user's own, for the full-disk test
# (TestFullDiskDuringPull uses a data dir on it): a 48 MiB tmpfs, which
# kernel overlayfs accepts as upper layer inside a user namespace (user
# xattrs on tmpfs: Linux >= 6.6). Mounted again after a reboot by the
# next run of this script.
SMALL_FS=${HUTCH_SMALL_FS:-/var/tmp/hutch-small}
mkdir -p "$SMALL_FS"
if ! mountpoint -q "$SMALL_FS"; then
	mount -t tmpfs -o size=48m,mode=0700,uid="$uid",gid="$(id -g "$TEST_USER")" hutch-small "$SMALL_FS"
fi
chown "$uid:$(id -g "$TEST_USER")" "$SMALL_FS"
chmod 0700 "$SMALL_FS"
echo "setup: user $TEST_USER (uid $uid), $(grep "^$TEST_USER:" /etc/subuid), small file system $SMALL_FS ($(findmnt -no FSTYPE,SIZE "$SMALL_FS" | tr -s ' '))"
