/* hutch-keeper's child side of rootlesskit's builtin port driver, served
 * from inside the detached network namespace: the firewall probe and the
 * routing for client source addresses (IP_TRANSPARENT), the requests on
 * the port socket, and the dials, each in a child process of its own,
 * whose sockets go back to the parent side (SCM_RIGHTS). Built with
 * HUTCH_KEEPER_MAIN only, as keeper.c. */
#ifdef HUTCH_KEEPER_MAIN
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "keeper.h"
#include "msg.h"

static int transparent;          /* -t given */
static const char *backend = ""; /* what the probe found */
static int routing_tried, routing_ready;

/* ---- Commands (firewall probes and rules) ---- */

/* run_all runs cmds in turn, each whatever the last one's status. */
static void run_all(char *const *const cmds[], const char *what)
{
	for (int i = 0; cmds[i] != NULL; i++) {
		int st = hk_run(cmds[i], 10000);
		if (st != 0)
			hk_dbg("source IP transparent %s: %s: exit status %d", what, cmds[i][0], st);
	}
}

/* probe finds the firewall tool that can mark the transparent
 * connections' packets, as rootlesskit's child does at its start. */
static void probe(const char *backend_choice)
{
	static char *const nft[] = {"nft", "list", "tables", NULL};
	static char *const ipt[] = {"iptables", "-t", "mangle", "-L", "-n", NULL};
	int auto_ = strcmp(backend_choice, "auto") == 0;
	if ((auto_ || strcmp(backend_choice, "nft") == 0) && hk_run(nft, 3000) == 0)
		backend = "nft";
	else if ((auto_ || strcmp(backend_choice, "iptables") == 0) && hk_run(ipt, 3000) == 0)
		backend = "iptables";
	if (*backend == '\0')
		hk_dbg("source IP transparent: neither nft nor iptables works: disabled");
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
		hk_dbg("source IP transparent: no firewall backend: client source addresses are not kept");
		return;
	}
	run_all(prep, "routing");
	run_all(strcmp(backend, "nft") == 0 ? nft : ipt, backend);
	routing_ready = 1;
}

/* ---- Requests and dials ---- */

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
	if (hk_write_all(c, hdr, 4) == 0)
		hk_write_all(c, body, (size_t)len);
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
			hk_dbg("transparent dial from %s:%ld failed, falling back: %s", r->source_ip, r->source_port, strerror(errno));
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
	if (hk_send_fds(c, "dummy", 5, &fd, 1) < 0)
		hk_dbg("passing the socket back: %s", strerror(errno));
	close(fd);
}

void hk_port_conn(int c)
{
	unsigned char hdr[4];
	static char body[HK_MAX_MSG];
	struct hk_port_req r;
	const char *err = NULL;
	uint32_t n;
	char msg[128];
	pid_t pid;

	hk_read_timeout(c);
	if (hk_read_full(c, hdr, 4) < 0) {
		hk_dbg("port request: %s", errno ? strerror(errno) : "EOF");
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
	if (hk_read_full(c, body, n) < 0 || hk_parse_port_req(body, n, &r, &err) < 0) {
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
		hk_close_keeper_fds();
		connect_target(c, &r);
		_exit(0);
	}
	if (pid < 0)
		port_reply(c, strerror(errno), 0);
	close(c);
}

/* ---- Start ---- */

int hk_port_start(const char *netns, const char *sock, const char *ready, const char *backend_choice)
{
	/* The whole process lives in the detached network namespace:
	 * every socket it dials is there. */
	struct stat want, cur;
	int fd = open(netns, O_RDONLY | O_CLOEXEC), w, l;
	if (fd < 0 || fstat(fd, &want) < 0 ||
	    ((stat("/proc/self/ns/net", &cur) < 0 || cur.st_dev != want.st_dev || cur.st_ino != want.st_ino) &&
		setns(fd, CLONE_NEWNET) < 0)) {
		if (fd >= 0)
			close(fd);
		hk_say("entering the network namespace %s: %s", netns, strerror(errno));
		return -1;
	}
	close(fd);
	if (backend_choice != NULL) {
		transparent = 1;
		probe(backend_choice);
	}
	/* rootlesskit's handshake: listen, then close the ready pipe. */
	w = open(ready, O_WRONLY | O_CLOEXEC);
	if (w < 0) {
		hk_say("port driver ready pipe %s: %s", ready, strerror(errno));
		return -1;
	}
	l = hk_listen_unix(sock, 0);
	if (l < 0) {
		hk_say("port driver socket %s: %s", sock, strerror(errno));
		close(w);
		return -1;
	}
	close(w);
	return l;
}
#endif
