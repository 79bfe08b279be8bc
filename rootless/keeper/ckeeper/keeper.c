/* hutch-keeper: the live-restore keeper's namespace child once the
 * namespaces are set up. hutch-ns, as rootlesskit's child, finishes the
 * user and mount namespaces and the detached network namespace (package
 * rootless/child) and execs this small static program, which inherits
 * them and
 *
 *   - hands the user and mount namespaces to engines on keeper.sock, one
 *     lease at a time (package rootless/keeper's protocol);
 *   - serves the child side of rootlesskit's builtin port driver from
 *     inside the detached network namespace: for each connection to a
 *     published port it dials the target there and passes the socket back
 *     (SCM_RIGHTS), with the client's source address when asked
 *     (IP_TRANSPARENT);
 *   - exits once no lease is out and no process but its own and its
 *     parent's is left in its user namespace.
 *
 * The command line is built by keeper.Command (rootless/keeper). One
 * thread: each dial runs in a child process, so a target that does not
 * answer holds up nothing else.
 *
 * This file holds main, its poll loop, the leases on keeper.sock and the
 * occupancy check; port.c the port driver's child side; util.c the
 * helpers both use (keeper.h); msg.c the decoders (msg.h). Built with
 * HUTCH_KEEPER_MAIN only, as port.c and util.c: cgo compiles every C
 * file of the package for its tests, which need msg.c alone. */
#ifdef HUTCH_KEEPER_MAIN
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keeper.h"
#include "msg.h"

/* The keeper protocol's version (keeper.Version). */
#define VERSION 1
/* How long a new keeper waits for the daemon that started it. */
#define FIRST_LEASE_MS 60000

static pid_t self, parent;
static int keeper_l = -1, port_l = -1, lease = -1;

void hk_close_keeper_fds(void)
{
	close(keeper_l);
	close(port_l);
	if (lease >= 0)
		close(lease);
}

/* ---- Occupancy ---- */

/* ppid_of is pid's parent, -1 if unknown. */
static pid_t ppid_of(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;
	long pp;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* After the command, in parentheses, which may hold anything. */
	p = strrchr(buf, ')');
	if (p == NULL || sscanf(p + 1, " %*c %ld", &pp) != 1)
		return -1;
	return (pid_t)pp;
}

/* occupied reports whether a process other than this one, its children
 * (dials, firewall commands) and its siblings (slirp4netns, which joins
 * the user namespace) lives in this user namespace: each running
 * container's shim does, and the engine's helpers until they end. When it
 * cannot tell, it says yes. */
static int occupied(void)
{
	char me[PATH_MAX], ns[PATH_MAX], path[64];
	struct dirent *e;
	ssize_t n;
	DIR *d;
	int found = 0;
	n = readlink("/proc/self/ns/user", me, sizeof me - 1);
	if (n <= 0)
		return 1;
	me[n] = '\0';
	d = opendir("/proc");
	if (d == NULL)
		return 1;
	while ((e = readdir(d)) != NULL) {
		pid_t pid, pp;
		char *end;
		pid = (pid_t)strtol(e->d_name, &end, 10);
		if (*end != '\0' || pid <= 0 || pid == self)
			continue;
		snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
		n = readlink(path, ns, sizeof ns - 1);
		if (n <= 0)
			continue;
		ns[n] = '\0';
		if (strcmp(ns, me) != 0)
			continue;
		pp = ppid_of(pid);
		if (pp == parent || pp == self)
			continue;
		found = 1;
		break;
	}
	closedir(d);
	return found;
}

/* ---- Leases ---- */

/* refuse answers a request that gets no lease. */
static void refuse(int c, const char *msg)
{
	char q[1024], line[1100];
	int n;
	if (hk_json_string(q, sizeof q, msg) < 0)
		strcpy(q, "\"refused\"");
	n = snprintf(line, sizeof line, "{\"v\":%d,\"err\":%s}\n", VERSION, q);
	if (hk_send_fds(c, "", 1, NULL, 0) == 0 && n > 0 && (size_t)n < sizeof line)
		hk_write_all(c, line, (size_t)n);
}

/* keeper_conn answers one client of keeper.sock and reports whether it
 * got a lease (then c is the lease). line is the reply with its newline,
 * written at once: a client has the whole JSON before the newline and may
 * be gone by a second write, and its lease would then count as never
 * given. */
static int keeper_conn(int c, const char *line)
{
	char buf[4096], msg[1024], q[256];
	size_t n = 0;
	struct hk_keeper_req r;
	const char *err = NULL;
	int fds[2], sent;

	hk_read_timeout(c);
	while (n < sizeof buf && memchr(buf, '\n', n) == NULL) {
		ssize_t got = read(c, buf + n, sizeof buf - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	if (hk_parse_keeper_req(buf, n, &r, &err) < 0) {
		snprintf(msg, sizeof msg, "reading the request: %s", n == 0 ? "EOF" : err);
		refuse(c, msg);
		return 0;
	}
	if (r.v != VERSION) {
		snprintf(msg, sizeof msg,
			"the keeper speaks version %d, the daemon version %ld: stop the running containers (the keeper then exits) or start the daemon of the keeper's build",
			VERSION, r.v);
		refuse(c, msg);
		return 0;
	}
	if (strcmp(r.op, "enter") != 0) {
		if (hk_json_string(q, sizeof q, r.op) < 0)
			strcpy(q, "?");
		snprintf(msg, sizeof msg, "unknown op %s", q);
		refuse(c, msg);
		return 0;
	}
	fds[0] = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	fds[1] = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (fds[0] < 0 || fds[1] < 0) {
		snprintf(msg, sizeof msg, "opening the namespaces: %s", strerror(errno));
		if (fds[0] >= 0)
			close(fds[0]);
		if (fds[1] >= 0)
			close(fds[1]);
		refuse(c, msg);
		return 0;
	}
	sent = hk_send_fds(c, "", 1, fds, 2) == 0 && hk_write_all(c, line, strlen(line)) == 0;
	close(fds[0]);
	close(fds[1]);
	if (!sent)
		return 0;
	/* The engine holds the lease for its life and sends nothing: no
	 * timeout on it. */
	struct timeval none = {0, 0};
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
	hk_dbg("lease given");
	return 1;
}

/* waiting reports whether a client waits on listener l. */
static int waiting(int l)
{
	struct pollfd p = {.fd = l, .events = POLLIN};
	return poll(&p, 1, 0) == 1;
}

static void on_child(int sig)
{
	(void)sig;
}

/* reply_line is reply and a newline. */
static char *reply_line(const char *reply)
{
	size_t n = strlen(reply);
	char *line = malloc(n + 2);
	if (line != NULL) {
		memcpy(line, reply, n);
		line[n] = '\n';
		line[n + 1] = '\0';
	}
	return line;
}

static void usage(void)
{
	fprintf(stderr, "usage: hutch-keeper -s keeper.sock -r reply-json -P parent-pid [-n netns -p port-socket -y ready-pipe [-t auto|nft|iptables]] [-i poll-ms] [-d]\n"
			"(started by hutch-ns as the live-restore keeper's namespace child)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *sock = NULL, *reply = NULL, *line, *netns = NULL, *port_sock = NULL, *ready = NULL, *backend_choice = NULL;
	long poll_ms = 250, want_parent = 0;
	long long start;
	int served = 0, opt;
	struct sigaction sa;
	sigset_t chld;

	while ((opt = getopt(argc, argv, "s:r:P:n:p:y:t:i:d")) != -1) {
		switch (opt) {
		case 's': sock = optarg; break;
		case 'r': reply = optarg; break;
		case 'P': want_parent = strtol(optarg, NULL, 10); break;
		case 'n': netns = optarg; break;
		case 'p': port_sock = optarg; break;
		case 'y': ready = optarg; break;
		case 't': backend_choice = optarg; break;
		case 'i': poll_ms = strtol(optarg, NULL, 10); break;
		case 'd': hk_debug = 1; break;
		default: usage();
		}
	}
	if (sock == NULL || reply == NULL || want_parent <= 0 || poll_ms <= 0 || optind != argc ||
	    (netns != NULL) != (port_sock != NULL) || (port_sock != NULL) != (ready != NULL))
		usage();
	if (backend_choice != NULL && strcmp(backend_choice, "auto") && strcmp(backend_choice, "nft") && strcmp(backend_choice, "iptables"))
		usage();
	line = reply_line(reply);
	if (line == NULL) {
		hk_say("the reply: %s", strerror(errno));
		return 1;
	}

	/* The namespaces go with hutch-ns (and slirp4netns with it). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != (pid_t)want_parent) {
		hk_say("the namespace parent is gone");
		return 1;
	}
	self = getpid();
	parent = (pid_t)want_parent;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &hk_unblocked);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, NULL);

	if (netns != NULL) {
		port_l = hk_port_start(netns, port_sock, ready, backend_choice);
		if (port_l < 0)
			return 1;
	}
	if (unlink(sock) < 0 && errno != ENOENT) {
		hk_say("removing %s: %s", sock, strerror(errno));
		return 1;
	}
	keeper_l = hk_listen_unix(sock, 0177);
	if (keeper_l < 0) {
		hk_say("keeper socket %s: %s", sock, strerror(errno));
		return 1;
	}
	hk_dbg("serving %s", sock);

	start = hk_now_ms();
	for (;;) {
		struct pollfd pf[3];
		struct timespec ts = {poll_ms / 1000, (poll_ms % 1000) * 1000000};
		int n = 0, ki = -1, li = -1, pi = -1, r;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (lease < 0) {
			pf[ki = n++] = (struct pollfd){.fd = keeper_l, .events = POLLIN};
		} else {
			pf[li = n++] = (struct pollfd){.fd = lease, .events = POLLIN};
		}
		if (port_l >= 0)
			pf[pi = n++] = (struct pollfd){.fd = port_l, .events = POLLIN};
		r = ppoll(pf, (nfds_t)n, lease < 0 ? &ts : NULL, &hk_unblocked);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			hk_say("poll: %s", strerror(errno));
			break;
		}
		if (r == 0) {
			/* Until the first lease, the daemon that started this
			 * keeper is on its way, unless it died before it came. */
			if ((served || hk_now_ms() - start > FIRST_LEASE_MS) && !occupied()) {
				hk_dbg("no engine and no container left: exiting");
				break;
			}
			continue;
		}
		if (pi >= 0 && pf[pi].revents) {
			int c = accept4(port_l, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0)
				hk_port_conn(c);
		}
		if (ki >= 0 && pf[ki].revents) {
			int c = accept4(keeper_l, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0) {
				if (keeper_conn(c, line)) {
					lease = c;
					served = 1;
				} else {
					close(c);
					if (served && !occupied()) {
						hk_dbg("no engine and no container left: exiting");
						break;
					}
				}
			}
		}
		if (li >= 0 && pf[li].revents) {
			char buf[64];
			ssize_t got = read(lease, buf, sizeof buf);
			if (got < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (got <= 0) {
				close(lease);
				lease = -1;
				hk_dbg("lease returned");
				/* A daemon that waits for it gets it now. */
				if (!waiting(keeper_l) && !occupied()) {
					hk_dbg("the engine ended and no container runs: exiting");
					break;
				}
			}
		}
	}
	close(keeper_l);
	unlink(sock);
	return 0;
}
#endif