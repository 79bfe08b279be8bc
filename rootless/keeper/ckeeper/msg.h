/* The messages hutch-keeper decodes and encodes: the keeper protocol's
 * request (package rootless/keeper: one JSON line) and the requests of
 * rootlesskit's builtin port driver (a uint32le length, then JSON). Both
 * come from processes of the same user, but a decoder takes nothing for
 * granted: every input is bounded, and anything it does not understand is
 * an error. */
#ifndef HUTCH_KEEPER_MSG_H
#define HUTCH_KEEPER_MSG_H

#include <stddef.h>

/* The largest message either decoder reads (rootlesskit's bound). */
#define HK_MAX_MSG 65536

/* A keeper request: {"v":1,"op":"enter"}. An absent v is 0, as Go
 * decodes it. */
struct hk_keeper_req {
	long v;
	char op[32];
};

/* A port driver request (rootlesskit's msg.Request). */
struct hk_port_req {
	char type[16];  /* "init" or "connect" */
	char proto[8];  /* tcp, tcp4, tcp6, udp, udp4, udp6 */
	char ip[64];
	long port;
	char parent_ip[64];
	char host_gateway_ip[64];
	char source_ip[64];
	long source_port;
};

/* hk_parse_keeper_req decodes the first JSON value of buf[0:n], which
 * must be an object; unknown keys are skipped, keys match without regard
 * to case (as Go's encoding/json). 0 on success, -1 with err set. */
int hk_parse_keeper_req(const char *buf, size_t n, struct hk_keeper_req *out, const char **err);

/* hk_parse_port_req decodes a port request's JSON body (without the
 * length), which must be exactly one object. */
int hk_parse_port_req(const char *buf, size_t n, struct hk_port_req *out, const char **err);

/* hk_json_string writes src as a JSON string (quotes included) into dst
 * of size cap, NUL-terminated; it returns the length, or -1 when it does
 * not fit. */
long hk_json_string(char *dst, size_t cap, const char *src);

#endif
