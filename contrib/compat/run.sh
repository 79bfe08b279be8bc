#!/usr/bin/env bash
# `make compat`: Docker Engine's own integration suite against hutch, as
# the unprivileged test user (contrib/compat/main.go says how). As root,
# the machine is prepared first, as for `make test`. The suite's source and
# compiled tests are kept in $HUTCH_COMPAT_DIR (default: /var/cache/
# hutch-compat as root, ~/.cache/hutch-compat otherwise) and reused.
# Arguments go to `compat run`, e.g. -pkgs container -run 'TestKill'.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/go/bin:$PATH
. contrib/test/as_user.sh

if [ "$(id -u)" = 0 ]; then
	bash contrib/test/setup-root.sh
	cache=${HUTCH_COMPAT_DIR:-/var/cache/hutch-compat}
else
	cache=${HUTCH_COMPAT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hutch-compat}
fi

make build
out=$(mktemp -d /tmp/hutch-compat-bin.XXXXXX)
chmod 755 "$out"
trap 'rm -rf "$out"' EXIT
cp bin/hutch* contrib/compat/known-failures.txt "$out/"
go build -o "$out/compat" ./contrib/compat
"$out/compat" build -dir "$cache"
chmod -R a+rX "$out" "$cache"

echo "== Docker's integration suite (as $(as_user id -un))"
as_user "$out/compat" run -dir "$cache" -bin "$out" -known "$out/known-failures.txt" "$@"
