// Package nsenter enters the namespaces a live-restore keeper holds
// before the Go runtime starts: setns(2) into a user namespace needs a
// single-threaded process, which a Go program never is once main runs,
// so a C constructor does it (as runc's nsexec and containers/storage's
// unshare do). `hutch daemon` re-executes itself with EnvNSEnter set to
// the descriptors of the keeper's user and mount namespaces
// (rootless/keeper); importing this package is all the hutch binary
// does.
package nsenter

/*
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void hutch_nsenter(void) {
	const char *v = getenv("_HUTCH_NSENTER");
	int userfd, mntfd;
	if (v == NULL || *v == '\0')
		return;
	if (sscanf(v, "%d,%d", &userfd, &mntfd) != 2) {
		fprintf(stderr, "hutch: _HUTCH_NSENTER=%s: want two descriptors\n", v);
		_exit(125);
	}
	if (setns(userfd, CLONE_NEWUSER) < 0) {
		fprintf(stderr, "hutch: entering the kept user namespace: %s\n", strerror(errno));
		_exit(125);
	}
	if (setns(mntfd, CLONE_NEWNS) < 0) {
		fprintf(stderr, "hutch: entering the kept mount namespace: %s\n", strerror(errno));
		_exit(125);
	}
	close(userfd);
	close(mntfd);
}
*/
import "C"

import "os"

// EnvNSEnter holds "userfd,mntfd": the constructor enters both
// namespaces, in that order, and closes the descriptors.
const EnvNSEnter = "_HUTCH_NSENTER"

// Entered reports whether this process entered kept namespaces at its
// start, and unsets EnvNSEnter so that nothing it starts sees it.
func Entered() bool {
	_, ok := os.LookupEnv(EnvNSEnter)
	os.Unsetenv(EnvNSEnter)
	return ok
}
