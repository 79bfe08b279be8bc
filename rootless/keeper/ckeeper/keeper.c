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
 * answer holds up nothing else. */
#ifdef HUTCH_KEEPER_MAIN
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "msg.h"

/* The keeper protocol's version (keeper.Version). */
#define VERSION 1
/* How long a new keeper waits for the daemon that started it. */
#define FIRST_LEASE_MS 60000
/* How long a peer may take to send its request. */
#define READ_TIMEOUT_S 5

static int debug;
static pid_t self, parent;
static sigset_t unblocked;

/* The port driver's child side. */
static int transparent;            /* -t given */
static const char *backend_choice; /* auto, nft, iptables */
static const char *backend = "";   /* what the probe found */
static int routing_tried, routing_ready;

static int keeper_l = -1, port_l = -1, lease = -1;

static void say(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "hutch-keeper: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define dbg(...)                      \
	do {                          \
		if (debug)            \
			say(__VA_ARGS__); \
	} while (0)

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int write_all(int fd, const void *buf, size_t n)
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

/* read_full reads exactly n bytes; 0 on success, -1 (errno; 0 at EOF). */
static int read_full(int fd, void *buf, size_t n)
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

static void read_timeout(int fd)
{
	struct timeval tv = {READ_TIMEOUT_S, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/* send_fds writes one byte carrying fds (n of them, maybe none). */
static int send_fds(int c, const char *data, size_t len, const int *fds, int n)
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

/* ---- Commands (firewall probes and rules) ---- */

/* run runs argv from PATH in this process's namespaces, its output in
 * the log when debugging, and returns its exit status (-1: it did not
 * end within limit_ms and was killed). */
static int run(char *const argv[], int limit_ms)
{
	long long deadline = now_ms() + limit_ms;
	int status;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		sigprocmask(SIG_SETMASK, &unblocked, NULL);
		dup2(null, 0);
		if (!debug) {
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
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(5000);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void run_all(char *const *const cmds[], const char *what)
{
	for (int i = 0; cmds[i] != NULL; i++) {
		int st = run(cmds[i], 10000);
		if (st != 0)
			dbg("source IP transparent %s: %s: exit status %d", what, cmds[i][0], st);
	}
}

/* probe finds the firewall tool that can mark the transparent
 * connections' packets, as rootlesskit's child does at its start. */
static void probe(void)
{
	static char *const nft[] = {"nft", "list", "tables", NULL};
	static char *const ipt[] = {"iptables", "-t", "mangle", "-L", "-n", NULL};
	int auto_ = strcmp(backend_choice, "auto") == 0;
	if ((auto_ || strcmp(backend_choice, "nft") == 0) && run(nft, 3000) == 0)
		backend = "nft";
	else if ((auto_ || strcmp(backend_choice, "iptables") == 0) && run(ipt, 3000) == 0)
		backend = "iptables";
	if (*backend == '\0')
		dbg("source IP transparent: neither nft nor iptables works: disabled");
}

/* setup_routing adds, on the first transparent connection, the policy
 * route that delivers the answers to transparent sockets locally and the
 * rules that mark their packets (rootlesskit's, in its own nftables table
 * or in iptables' mangle table). */
static void setup_routing(void)
{
	static char *const prep0[] = {"ip", "route", "add", "local", "default", "dev", "lo", "table", "100", NULL};
	static char *const prep1[] = {"ip", "-6", "route", "add", "local", "default", "dev", "lo", "table", "100", NULL};
	static char *const prep2[] = {"ip", "rule", "add", "fwmark", "100", "lookup", "100", "priority", "100", NULL};
	static char *const prep3[] = {"ip", "-6", "rule", "add", "fwmark", "100", "lookup", "100", "priority", "100", NULL};
	static char *const prep4[] = {"sysctl", "-w", "net.ipv4.tcp_fwmark_accept=1", NULL};
	static char *const *const prep[] = {prep0, prep1, prep2, prep3, prep4, NULL};
#define T "rootlesskit_transparent"
	static char *const nft0[] = {"nft", "add", "table", "inet", T, NULL};
	static char *const nft1[] = {"nft", "add", "chain", "inet", T, "output", "{", "type", "filter", "hook", "output", "priority", "mangle", ";", "}", NULL};
	static char *const nft2[] = {"nft", "add", "chain", "inet", T, "prerouting", "{", "type", "filter", "hook", "prerouting", "priority", "mangle", ";", "}", NULL};
	static char *const nft3[] = {"nft", "add", "rule", "inet", T, "output", "meta", "l4proto", "tcp", "fib", "saddr", "type", "!=", "local", "ct", "mark", "set", "100", NULL};
	static char *const nft4[] = {"nft", "add", "rule", "inet", T, "prerouting", "meta", "l4proto", "tcp", "ct", "mark", "100", "meta", "mark", "set", "100", NULL};
#undef T
	static char *const *const nft[] = {nft0, nft1, nft2, nft3, nft4, NULL};
	static char *const ipt0[] = {"iptables", "-t", "mangle", "-A", "OUTPUT", "-p", "tcp", "-m", "addrtype", "!", "--src-type", "LOCAL", "-j", "CONNMARK", "--set-mark", "100", NULL};
	static char *const ipt1[] = {"ip6tables", "-t", "mangle", "-A", "OUTPUT", "-p", "tcp", "-m", "addrtype", "!", "--src-type", "LOCAL", "-j", "CONNMARK", "--set-mark", "100", NULL};
	static char *const ipt2[] = {"iptables", "-t", "mangle", "-A", "PREROUTING", "-p", "tcp", "-m", "connmark", "--mark", "100", "-j", "MARK", "--set-mark", "100", NULL};
	static char *const ipt3[] = {"ip6tables", "-t", "mangle", "-A", "PREROUTING", "-p", "tcp", "-m", "connmark", "--mark", "100", "-j", "MARK", "--set-mark", "100", NULL};
	static char *const *const ipt[] = {ipt0, ipt1, ipt2, ipt3, NULL};

	routing_tried = 1;
	if (*backend == '\0') {
		dbg("source IP transparent: no firewall backend: client source addresses are not kept");
		return;
	}
	run_all(prep, "routing");
	run_all(strcmp(backend, "nft") == 0 ? nft : ipt, backend);
	routing_ready = 1;
}

/* ---- The port driver's child side ---- */

union addr {
	struct sockaddr sa;
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
};

/* parse_ip reads a literal address (an IPv4-mapped one as IPv4). */
static int parse_ip(const char *s, int port, union addr *a, socklen_t *len)
{
	memset(a, 0, sizeof *a);
	if (inet_pton(AF_INET, s, &a->in4.sin_addr) == 1) {
		a->in4.sin_family = AF_INET;
		a->in4.sin_port = htons((uint16_t)port);
		*len = sizeof a->in4;
		return 0;
	}
	if (inet_pton(AF_INET6, s, &a->in6.sin6_addr) == 1) {
		if (IN6_IS_ADDR_V4MAPPED(&a->in6.sin6_addr)) {
			struct in_addr v4;
			memcpy(&v4, &a->in6.sin6_addr.s6_addr[12], 4);
			memset(a, 0, sizeof *a);
			a->in4.sin_family = AF_INET;
			a->in4.sin_addr = v4;
			a->in4.sin_port = htons((uint16_t)port);
			*len = sizeof a->in4;
			return 0;
		}
		a->in6.sin6_family = AF_INET6;
		a->in6.sin6_port = htons((uint16_t)port);
		*len = sizeof a->in6;
		return 0;
	}
	return -1;
}

static int is_loopback(const union addr *a)
{
	if (a->sa.sa_family == AF_INET)
		return (ntohl(a->in4.sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&a->in6.sin6_addr);
}

/* transparent_dial connects to dst from src (IP_TRANSPARENT), within a
 * second, as rootlesskit's child does. */
static int transparent_dial(const union addr *dst, socklen_t dlen, const union addr *src, socklen_t slen)
{
	int one = 1, fd, err = 0;
	socklen_t elen = sizeof err;
	struct pollfd p;
	if (dst->sa.sa_family != src->sa.sa_family)
		return -1;
	fd = socket(dst->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if ((dst->sa.sa_family == AF_INET
		    ? setsockopt(fd, SOL_IP, IP_TRANSPARENT, &one, sizeof one)
		    : setsockopt(fd, SOL_IPV6, IPV6_TRANSPARENT, &one, sizeof one)) < 0 ||
	    bind(fd, &src->sa, slen) < 0)
		goto fail;
	if (connect(fd, &dst->sa, dlen) < 0) {
		if (errno != EINPROGRESS)
			goto fail;
		p.fd = fd;
		p.events = POLLOUT;
		if (poll(&p, 1, 1000) != 1) {
			errno = ETIMEDOUT;
			goto fail;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
			goto fail;
		if (err != 0) {
			errno = err;
			goto fail;
		}
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/* port_reply writes a reply (uint32le length, JSON) carrying an error,
 * or the backend for an "init". */
static void port_reply(int c, const char *err, int init)
{
	char body[1024], q[512];
	uint32_t n;
	unsigned char hdr[4];
	int len;
	if (hk_json_string(q, sizeof q, err ? err : "") < 0)
		strcpy(q, "\"(error too long)\"");
	if (init && transparent)
		len = snprintf(body, sizeof body, "{\"Error\":%s,\"SourceIPTransparentBackend\":\"%s\"}", q, backend);
	else
		len = snprintf(body, sizeof body, "{\"Error\":%s}", q);
	if (len < 0 || (size_t)len >= sizeof body)
		return;
	n = (uint32_t)len;
	hdr[0] = (unsigned char)n;
	hdr[1] = (unsigned char)(n >> 8);
	hdr[2] = (unsigned char)(n >> 16);
	hdr[3] = (unsigned char)(n >> 24);
	if (write_all(c, hdr, 4) == 0)
		write_all(c, body, (size_t)len);
}

/* connect_target runs in a child process of its own: it dials what r
 * asks for and passes the socket back on c. */
static void connect_target(int c, const struct hk_port_req *r)
{
	char err[512];
	const char *ip = r->ip, *proto = r->proto;
	int stream = strncmp(proto, "tcp", 3) == 0, fd = -1;
	union addr dst, src;
	socklen_t dlen, slen;

	if (*ip == '\0') {
		ip = "127.0.0.1";
		if (*r->parent_ip != '\0' && strcmp(r->parent_ip, r->host_gateway_ip) != 0 && strcmp(r->parent_ip, "0.0.0.0") != 0)
			ip = r->parent_ip;
	}
	if (r->port < 0 || r->port > 65535 || parse_ip(ip, (int)r->port, &dst, &dlen) < 0) {
		snprintf(err, sizeof err, "invalid address %s port %ld", ip, r->port);
		port_reply(c, err, 0);
		return;
	}
	if (stream && routing_ready && *r->source_ip != '\0' && r->source_port > 0 && r->source_port <= 65535 &&
	    parse_ip(r->source_ip, (int)r->source_port, &src, &slen) == 0 && !is_loopback(&src)) {
		fd = transparent_dial(&dst, dlen, &src, slen);
		if (fd < 0)
			dbg("transparent dial from %s:%ld failed, falling back: %s", r->source_ip, r->source_port, strerror(errno));
	}
	if (fd < 0) {
		fd = socket(dst.sa.sa_family, (stream ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
		if (fd >= 0 && !stream && dst.sa.sa_family == AF_INET) {
			int one = 1;
			setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof one);
		}
		while (fd >= 0 && connect(fd, &dst.sa, dlen) < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, sizeof err, "dial %s %s port %ld: %s", stream ? "tcp" : "udp", ip, r->port, strerror(errno));
			port_reply(c, err, 0);
			close(fd);
			return;
		}
		if (fd < 0) {
			snprintf(err, sizeof err, "socket: %s", strerror(errno));
			port_reply(c, err, 0);
			return;
		}
	}
	if (send_fds(c, "dummy", 5, &fd, 1) < 0)
		dbg("passing the socket back: %s", strerror(errno));
	close(fd);
}

/* port_conn serves one connection of the port driver's parent side. */
static void port_conn(int c)
{
	unsigned char hdr[4];
	static char body[HK_MAX_MSG];
	struct hk_port_req r;
	const char *err = NULL;
	uint32_t n;
	char msg[128];
	pid_t pid;

	read_timeout(c);
	if (read_full(c, hdr, 4) < 0) {
		dbg("port request: %s", errno ? strerror(errno) : "EOF");
		close(c);
		return;
	}
	n = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 24;
	if (n < 1 || n > HK_MAX_MSG) {
		snprintf(msg, sizeof msg, "bad message length: %u (max: %d)", n, HK_MAX_MSG);
		port_reply(c, msg, 0);
		close(c);
		return;
	}
	if (read_full(c, body, n) < 0 || hk_parse_port_req(body, n, &r, &err) < 0) {
		port_reply(c, err ? err : "reading the request", 0);
		close(c);
		return;
	}
	if (strcmp(r.type, "init") == 0) {
		port_reply(c, NULL, 1);
		close(c);
		return;
	}
	if (strcmp(r.type, "connect") != 0) {
		port_reply(c, "unknown request type", 0);
		close(c);
		return;
	}
	if (strcmp(r.proto, "tcp") && strcmp(r.proto, "tcp4") && strcmp(r.proto, "tcp6") &&
	    strcmp(r.proto, "udp") && strcmp(r.proto, "udp4") && strcmp(r.proto, "udp6")) {
		port_reply(c, "unknown proto", 0);
		close(c);
		return;
	}
	/* The rules go in once, here, so that every later dial finds them. */
	if (transparent && !routing_tried && strncmp(r.proto, "tcp", 3) == 0 && *r.source_ip != '\0' && r.source_port != 0) {
		union addr src;
		socklen_t slen;
		if (parse_ip(r.source_ip, 0, &src, &slen) == 0 && !is_loopback(&src))
			setup_routing();
	}
	pid = fork();
	if (pid == 0) {
		close(keeper_l);
		close(port_l);
		if (lease >= 0)
			close(lease);
		connect_target(c, &r);
		_exit(0);
	}
	if (pid < 0)
		port_reply(c, strerror(errno), 0);
	close(c);
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
	if (send_fds(c, "", 1, NULL, 0) == 0 && n > 0 && (size_t)n < sizeof line)
		write_all(c, line, (size_t)n);
}

/* keeper_conn answers one client of keeper.sock and reports whether it
 * got a lease (then c is the lease). */
static int keeper_conn(int c, const char *reply)
{
	char buf[4096], msg[1024], q[256];
	size_t n = 0;
	struct hk_keeper_req r;
	const char *err = NULL;
	int fds[2], sent;

	read_timeout(c);
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
	sent = send_fds(c, "", 1, fds, 2) == 0 && write_all(c, reply, strlen(reply)) == 0 && write_all(c, "\n", 1) == 0;
	close(fds[0]);
	close(fds[1]);
	if (!sent)
		return 0;
	/* The engine holds the lease for its life and sends nothing: no
	 * timeout on it. */
	struct timeval none = {0, 0};
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
	dbg("lease given");
	return 1;
}

static int listen_unix(const char *path, mode_t mask)
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

static void usage(void)
{
	fprintf(stderr, "usage: hutch-keeper -s keeper.sock -r reply-json -P parent-pid [-n netns -p port-socket -y ready-pipe [-t auto|nft|iptables]] [-i poll-ms] [-d]\n"
			"(started by hutch-ns as the live-restore keeper's namespace child)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *sock = NULL, *reply = NULL, *netns = NULL, *port_sock = NULL, *ready = NULL;
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
		case 't': transparent = 1; backend_choice = optarg; break;
		case 'i': poll_ms = strtol(optarg, NULL, 10); break;
		case 'd': debug = 1; break;
		default: usage();
		}
	}
	if (sock == NULL || reply == NULL || want_parent <= 0 || poll_ms <= 0 || optind != argc ||
	    (netns != NULL) != (port_sock != NULL) || (port_sock != NULL) != (ready != NULL))
		usage();
	if (transparent && strcmp(backend_choice, "auto") && strcmp(backend_choice, "nft") && strcmp(backend_choice, "iptables"))
		usage();

	/* The namespaces go with hutch-ns (and slirp4netns with it). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != (pid_t)want_parent) {
		say("the namespace parent is gone");
		return 1;
	}
	self = getpid();
	parent = (pid_t)want_parent;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &unblocked);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, NULL);

	if (netns != NULL) {
		/* The whole process lives in the detached network namespace:
		 * every socket it dials is there. */
		struct stat want, cur;
		int fd = open(netns, O_RDONLY | O_CLOEXEC), w;
		if (fd < 0 || fstat(fd, &want) < 0 ||
		    ((stat("/proc/self/ns/net", &cur) < 0 || cur.st_dev != want.st_dev || cur.st_ino != want.st_ino) &&
			setns(fd, CLONE_NEWNET) < 0)) {
			say("entering the network namespace %s: %s", netns, strerror(errno));
			return 1;
		}
		close(fd);
		if (transparent)
			probe();
		/* rootlesskit's handshake: listen, then close the ready pipe. */
		w = open(ready, O_WRONLY | O_CLOEXEC);
		if (w < 0) {
			say("port driver ready pipe %s: %s", ready, strerror(errno));
			return 1;
		}
		port_l = listen_unix(port_sock, 0);
		if (port_l < 0) {
			say("port driver socket %s: %s", port_sock, strerror(errno));
			return 1;
		}
		close(w);
	}
	if (unlink(sock) < 0 && errno != ENOENT) {
		say("removing %s: %s", sock, strerror(errno));
		return 1;
	}
	keeper_l = listen_unix(sock, 0177);
	if (keeper_l < 0) {
		say("keeper socket %s: %s", sock, strerror(errno));
		return 1;
	}
	dbg("serving %s", sock);

	start = now_ms();
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
		r = ppoll(pf, (nfds_t)n, lease < 0 ? &ts : NULL, &unblocked);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			say("poll: %s", strerror(errno));
			break;
		}
		if (r == 0) {
			/* Until the first lease, the daemon that started this
			 * keeper is on its way, unless it died before it came. */
			if ((served || now_ms() - start > FIRST_LEASE_MS) && !occupied()) {
				dbg("no engine and no container left: exiting");
				break;
			}
			continue;
		}
		if (pi >= 0 && pf[pi].revents) {
			int c = accept4(port_l, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0)
				port_conn(c);
		}
		if (ki >= 0 && pf[ki].revents) {
			int c = accept4(keeper_l, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0) {
				if (keeper_conn(c, reply)) {
					lease = c;
					served = 1;
				} else {
					close(c);
					if (served && !occupied()) {
						dbg("no engine and no container left: exiting");
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
				dbg("lease returned");
				/* A daemon that waits for it gets it now. */
				if (!waiting(keeper_l) && !occupied()) {
					dbg("the engine ended and no container runs: exiting");
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
