/* hutch-keeper's helpers: logging, timekeeping, whole reads and writes,
 * passing file descriptors, listening on a Unix socket, and running a
 * command with a time limit. Built with HUTCH_KEEPER_MAIN only, as
 * keeper.c (cgo compiles every C file of the package for its tests). */
#ifdef HUTCH_KEEPER_MAIN
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keeper.h"

/* How long a peer may take to send its request. */
#define READ_TIMEOUT_S 5

int hk_debug;
sigset_t hk_unblocked;

void hk_say(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "hutch-keeper: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

long long hk_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int hk_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int hk_read_full(int fd, void *buf, size_t n)
{
	char *p = buf;
	while (n > 0) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			errno = 0;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

void hk_read_timeout(int fd)
{
	struct timeval tv = {READ_TIMEOUT_S, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

int hk_send_fds(int c, const char *data, size_t len, const int *fds, int n)
{
	char ctl[CMSG_SPACE(2 * sizeof(int))];
	struct iovec iov = {(void *)data, len};
	struct msghdr m = {0};
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	if (n > 0) {
		struct cmsghdr *cm;
		memset(ctl, 0, sizeof ctl);
		m.msg_control = ctl;
		m.msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
		cm = CMSG_FIRSTHDR(&m);
		if (cm == NULL || n > 2) { /* ctl holds two */
			errno = EINVAL;
			return -1;
		}
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)n * sizeof(int));
	}
	for (;;) {
		ssize_t w = sendmsg(c, &m, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		return w < 0 ? -1 : 0;
	}
}

int hk_listen_unix(const char *path, mode_t mask)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	mode_t old;
	int fd, e;
	if (strlen(path) >= sizeof a.sun_path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	old = umask(mask);
	e = bind(fd, (struct sockaddr *)&a, sizeof a);
	umask(old);
	if (e < 0 || listen(fd, SOMAXCONN) < 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int hk_run(char *const argv[], int limit_ms)
{
	long long deadline = hk_now_ms() + limit_ms;
	int status;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		sigprocmask(SIG_SETMASK, &hk_unblocked, NULL);
		dup2(null, 0);
		if (!hk_debug) {
			dup2(null, 1);
			dup2(null, 2);
		} else {
			dup2(2, 1);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -1;
		if (hk_now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(5000);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
#endif
