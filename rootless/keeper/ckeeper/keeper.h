/* What hutch-keeper's files share: util.c's logging, I/O and command
 * runner, port.c's entry points (the port driver's child side), and the
 * one thing keeper.c lends port.c (closing its sockets in a forked
 * child). The decoders are in msg.h. */
#ifndef HUTCH_KEEPER_H
#define HUTCH_KEEPER_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

/* ---- util.c ---- */

/* hk_debug is set by -d: hk_dbg logs, and commands' output goes to the
 * log. */
extern int hk_debug;
/* hk_unblocked is the signal mask before SIGCHLD was blocked: ppoll
 * waits with it, and commands run with it. */
extern sigset_t hk_unblocked;

/* hk_say logs a line on stderr, prefixed "hutch-keeper: ". */
void hk_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define hk_dbg(...)                      \
	do {                             \
		if (hk_debug)            \
			hk_say(__VA_ARGS__); \
	} while (0)

long long hk_now_ms(void);
int hk_write_all(int fd, const void *buf, size_t n);
/* hk_read_full reads exactly n bytes; 0 on success, -1 (errno; 0 at
 * EOF). */
int hk_read_full(int fd, void *buf, size_t n);
/* hk_read_timeout bounds how long a peer may take to send its request. */
void hk_read_timeout(int fd);
/* hk_send_fds writes data (a byte, or rootlesskit's "dummy") carrying
 * fds: n of them, at most 2, maybe none. */
int hk_send_fds(int c, const char *data, size_t len, const int *fds, int n);
/* hk_run runs argv from PATH in this process's namespaces, its output in
 * the log when debugging, and returns its exit status (-1: it did not
 * end within limit_ms and was killed). */
int hk_run(char *const argv[], int limit_ms);
/* hk_listen_unix listens on a new socket at path, created under umask
 * mask. */
int hk_listen_unix(const char *path, mode_t mask);

/* ---- port.c ---- */

/* hk_port_start enters the network namespace netns, finds the firewall
 * tool when backend_choice (-t: auto, nft, iptables) is not NULL, and
 * listens on sock with rootlesskit's handshake on the pipe ready. It
 * returns the listener, or -1 once it has said why. */
int hk_port_start(const char *netns, const char *sock, const char *ready, const char *backend_choice);
/* hk_port_conn serves, and closes, one connection of the port driver's
 * parent side. */
void hk_port_conn(int c);

/* ---- keeper.c ---- */

/* hk_close_keeper_fds closes, in a forked child, the keeper's listeners
 * and lease. */
void hk_close_keeper_fds(void);

#endif
