#!/usr/bin/env bash
# `make demo`: start hutch as an unprivileged user and run a container with
# the real docker CLI, offline. As root it prepares the machine first (Debian
# packages, the test user) and runs everything as that user; as a user it
# runs as you. The busybox image is built from Debian's busybox-static and
# served by Debian's docker-registry on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
TEST_USER=${HUTCH_TEST_USER:-hutchtest}

if [ "$(id -u)" = 0 ]; then
	bash contrib/test/setup-root.sh
fi
make build >/dev/null
work=$(mktemp -d /tmp/hutch-demo.XXXXXX)
chmod 755 "$work"
mkdir -p "$work/bin"
cp bin/hutch* "$work/bin/"
go build -o "$work/bin/mkimage" ./contrib/mkimage
if [ "$(id -u)" = 0 ]; then
	chown -R "$TEST_USER" "$work"
	run_as=(runuser -u "$TEST_USER" -- env -i HOME="$(getent passwd "$TEST_USER" | cut -d: -f6)" USER="$TEST_USER"
		PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin)
else
	run_as=(env)
fi
"${run_as[@]}" WORK="$work" bash -c '
	set -euo pipefail
	cd "$WORK"
	export XDG_RUNTIME_DIR=$WORK/run XDG_DATA_HOME=$WORK/data XDG_CONFIG_HOME=$WORK/config
	mkdir -p run && chmod 700 run
	cleanup() {
		set +x
		[ -n "${hutch:-}" ] && kill -TERM "$hutch" && wait "$hutch" || true
		[ -n "${reg:-}" ] && kill "$reg" || true
		unshare --map-auto --map-root-user rm -rf "$WORK/data" 2>/dev/null || true
	}
	trap cleanup EXIT

	echo "+ hutch check"
	./bin/hutch check || true

	port=$((20000 + RANDOM % 20000))
	printf "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n" "$WORK/registry" "$port" >registry.yml
	docker-registry serve registry.yml >registry.log 2>&1 &
	reg=$!
	for i in $(seq 100); do curl -fs "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.05; done
	./bin/mkimage -push "127.0.0.1:$port/library/busybox:latest"

	./bin/hutch daemon >daemon.log 2>&1 &
	hutch=$!
	eval "$(./bin/hutch env)"
	for i in $(seq 200); do docker version >/dev/null 2>&1 && break; sleep 0.05; done
	set -x
	docker version --format "client {{.Client.Version}}, server {{.Server.Platform.Name}}"
	docker info --format "{{.SecurityOptions}} driver={{.Driver}}"
	docker pull "127.0.0.1:$port/library/busybox"
	docker run --rm "127.0.0.1:$port/library/busybox" echo "hello from a rootless hutch container"
	docker run --rm "127.0.0.1:$port/library/busybox" id
	docker run -d --name demo "127.0.0.1:$port/library/busybox" sh -c "echo up; sleep 30"
	docker ps
	docker logs demo
	docker rm -f demo
	docker images
'
rm -rf "$work"
