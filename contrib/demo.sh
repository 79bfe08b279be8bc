#!/usr/bin/env bash
# `make demo`: start hutch as an unprivileged user and show it working with
# the real docker CLI. As root it prepares the machine first (Debian
# packages, the test user) and runs everything as that user; as a user it
# runs as you. Works offline.
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
cp bin/hutch bin/hutch-shim "$work/"
as_user() {
	if [ "$(id -u)" = 0 ]; then
		chown -R "$TEST_USER" "$work"
		runuser -u "$TEST_USER" -- env -i HOME="$(getent passwd "$TEST_USER" | cut -d: -f6)" USER="$TEST_USER" \
			PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin "$@"
	else
		"$@"
	fi
}
export_env="XDG_RUNTIME_DIR=$work/run XDG_DATA_HOME=$work/data XDG_CONFIG_HOME=$work/config"
mkdir -p "$work/run" && chmod 700 "$work/run"
as_user env $export_env bash -c '
	set -e
	cd "'"$work"'"
	./hutch check || true
	./hutch daemon >daemon.log 2>&1 &
	pid=$!
	trap "kill -TERM $pid; wait $pid" EXIT
	eval "$(env '"$export_env"' ./hutch env)"
	for i in $(seq 100); do [ -S "${DOCKER_HOST#unix://}" ] && break; sleep 0.05; done
	echo "+ DOCKER_HOST=$DOCKER_HOST docker version"
	docker version
	echo "+ docker info (security options)"
	docker info --format "{{json .SecurityOptions}}"
	echo "+ engine process: $(ps -o user=,pid=,args= --ppid $(pgrep -P $pid -f "daemon") | head -1)"
'
rm -rf "$work"
