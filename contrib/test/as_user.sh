# as_user runs a command as the unprivileged test user when the caller is
# root (with a clean environment: HOME, USER, PATH, TMPDIR and the small
# file system's path), else as the caller. Sourced by the test scripts.
TEST_USER=${HUTCH_TEST_USER:-hutchtest}

as_user() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u "$TEST_USER" -- env -i HOME="$(getent passwd "$TEST_USER" | cut -d: -f6)" \
			USER="$TEST_USER" PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin TMPDIR=/tmp \
			HUTCH_SMALL_FS="${HUTCH_SMALL_FS:-}" "$@"
	else
		"$@"
	fi
}
