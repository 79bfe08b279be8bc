/* hutch-keeper's decoders: a JSON object reader that knows only what the
 * two requests need (strings, integers, literals; any other value is
 * skipped as a whole), bounded in size and depth. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "msg.h"

#define MAX_DEPTH 64

struct scan {
	const char *p, *end;
	const char *err;
	int depth;
};

static int fail(struct scan *s, const char *msg)
{
	if (s->err == NULL)
		s->err = msg;
	return -1;
}

static void ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static int hex4(struct scan *s, unsigned *out)
{
	unsigned v = 0;
	if (s->end - s->p < 4)
		return fail(s, "short \\u escape");
	for (int i = 0; i < 4; i++) {
		char c = *s->p++;
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return fail(s, "bad \\u escape");
	}
	*out = v;
	return 0;
}

/* put appends byte c to dst (cap bytes, NUL included); over cap it marks
 * the string truncated. dst NULL: the string is skipped. */
static void put(char *dst, size_t cap, size_t *n, int *trunc, unsigned char c)
{
	if (dst == NULL)
		return;
	if (*n + 1 >= cap) {
		*trunc = 1;
		return;
	}
	dst[(*n)++] = (char)c;
}

static void put_utf8(char *dst, size_t cap, size_t *n, int *trunc, unsigned cp)
{
	if (cp < 0x80) {
		put(dst, cap, n, trunc, (unsigned char)cp);
	} else if (cp < 0x800) {
		put(dst, cap, n, trunc, (unsigned char)(0xc0 | (cp >> 6)));
		put(dst, cap, n, trunc, (unsigned char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		put(dst, cap, n, trunc, (unsigned char)(0xe0 | (cp >> 12)));
		put(dst, cap, n, trunc, (unsigned char)(0x80 | ((cp >> 6) & 0x3f)));
		put(dst, cap, n, trunc, (unsigned char)(0x80 | (cp & 0x3f)));
	} else {
		put(dst, cap, n, trunc, (unsigned char)(0xf0 | (cp >> 18)));
		put(dst, cap, n, trunc, (unsigned char)(0x80 | ((cp >> 12) & 0x3f)));
		put(dst, cap, n, trunc, (unsigned char)(0x80 | ((cp >> 6) & 0x3f)));
		put(dst, cap, n, trunc, (unsigned char)(0x80 | (cp & 0x3f)));
	}
}

/* str reads a string into dst (NUL-terminated; dst NULL skips it) and
 * sets *trunc when it did not fit. */
static int str(struct scan *s, char *dst, size_t cap, int *trunc)
{
	size_t n = 0;
	*trunc = 0;
	if (s->p >= s->end || *s->p != '"')
		return fail(s, "want a string");
	s->p++;
	for (;;) {
		unsigned char c;
		unsigned cp, lo;
		if (s->p >= s->end)
			return fail(s, "unterminated string");
		c = (unsigned char)*s->p++;
		if (c == '"')
			break;
		if (c < 0x20)
			return fail(s, "control character in a string");
		if (c != '\\') {
			put(dst, cap, &n, trunc, c);
			continue;
		}
		if (s->p >= s->end)
			return fail(s, "unterminated string");
		switch (*s->p++) {
		case '"': c = '"'; break;
		case '\\': c = '\\'; break;
		case '/': c = '/'; break;
		case 'b': c = '\b'; break;
		case 'f': c = '\f'; break;
		case 'n': c = '\n'; break;
		case 'r': c = '\r'; break;
		case 't': c = '\t'; break;
		case 'u':
			if (hex4(s, &cp) < 0)
				return -1;
			if (cp >= 0xd800 && cp < 0xdc00 && s->end - s->p >= 6 && s->p[0] == '\\' && s->p[1] == 'u') {
				const char *save = s->p;
				s->p += 2;
				if (hex4(s, &lo) < 0)
					return -1;
				if (lo >= 0xdc00 && lo < 0xe000)
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				else
					s->p = save;
			}
			if (cp >= 0xd800 && cp < 0xe000)
				cp = 0xfffd; /* a lone surrogate, as Go decodes it */
			if (cp == 0 && dst != NULL)
				return fail(s, "NUL in a string");
			put_utf8(dst, cap, &n, trunc, cp);
			continue;
		default:
			return fail(s, "bad escape in a string");
		}
		put(dst, cap, &n, trunc, c);
	}
	if (dst != NULL)
		dst[n] = '\0';
	return 0;
}

/* num reads a number; with out, it must be an integer that fits a long. */
static int num(struct scan *s, long *out)
{
	int isint = 1, neg = 0;
	unsigned long v = 0;
	int over = 0;
	if (s->p < s->end && *s->p == '-') {
		neg = 1;
		s->p++;
	}
	if (s->p >= s->end || *s->p < '0' || *s->p > '9')
		return fail(s, "bad number");
	if (*s->p == '0') {
		s->p++;
	} else {
		while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
			unsigned d = (unsigned)(*s->p++ - '0');
			if (v > (ULONG_MAX - d) / 10)
				over = 1;
			else
				v = v * 10 + d;
		}
	}
	if (s->p < s->end && *s->p == '.') {
		isint = 0;
		s->p++;
		if (s->p >= s->end || *s->p < '0' || *s->p > '9')
			return fail(s, "bad number");
		while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
			s->p++;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		isint = 0;
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (s->p >= s->end || *s->p < '0' || *s->p > '9')
			return fail(s, "bad number");
		while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
			s->p++;
	}
	if (out == NULL)
		return 0;
	if (!isint)
		return fail(s, "want an integer");
	if (over || (!neg && v > (unsigned long)LONG_MAX) || (neg && v > (unsigned long)LONG_MAX + 1))
		return fail(s, "integer out of range");
	*out = neg ? (long)(0 - v) : (long)v;
	return 0;
}

static int lit(struct scan *s, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
		return fail(s, "bad value");
	s->p += n;
	return 0;
}

static int skip(struct scan *s);

/* field is called with the scanner at a key's value. */
typedef int (*field_fn)(struct scan *s, const char *key, void *out);

static int object(struct scan *s, field_fn fn, void *out)
{
	if (++s->depth > MAX_DEPTH)
		return fail(s, "nested too deep");
	ws(s);
	if (s->p >= s->end || *s->p != '{')
		return fail(s, "want an object");
	s->p++;
	ws(s);
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		s->depth--;
		return 0;
	}
	for (;;) {
		char key[32];
		int trunc;
		ws(s);
		if (str(s, key, sizeof key, &trunc) < 0)
			return -1;
		ws(s);
		if (s->p >= s->end || *s->p != ':')
			return fail(s, "want ':' after a key");
		s->p++;
		ws(s);
		if (trunc || fn == NULL) {
			if (skip(s) < 0)
				return -1;
		} else if (fn(s, key, out) < 0) {
			return -1;
		}
		ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
			continue;
		}
		if (s->p < s->end && *s->p == '}') {
			s->p++;
			break;
		}
		return fail(s, "want ',' or '}' in an object");
	}
	s->depth--;
	return 0;
}

static int array(struct scan *s)
{
	if (++s->depth > MAX_DEPTH)
		return fail(s, "nested too deep");
	s->p++; /* '[' */
	ws(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		s->depth--;
		return 0;
	}
	for (;;) {
		ws(s);
		if (skip(s) < 0)
			return -1;
		ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
			continue;
		}
		if (s->p < s->end && *s->p == ']') {
			s->p++;
			break;
		}
		return fail(s, "want ',' or ']' in an array");
	}
	s->depth--;
	return 0;
}

/* skip reads any value and drops it. */
static int skip(struct scan *s)
{
	int trunc;
	if (s->p >= s->end)
		return fail(s, "want a value");
	switch (*s->p) {
	case '{': return object(s, NULL, NULL);
	case '[': return array(s);
	case '"': return str(s, NULL, 0, &trunc);
	case 't': return lit(s, "true");
	case 'f': return lit(s, "false");
	case 'n': return lit(s, "null");
	default: return num(s, NULL);
	}
}

/* A null leaves a field as it is, as Go's decoder does. */
static int is_null(struct scan *s)
{
	if (s->end - s->p >= 4 && memcmp(s->p, "null", 4) == 0) {
		s->p += 4;
		return 1;
	}
	return 0;
}

static int str_field(struct scan *s, char *dst, size_t cap)
{
	int trunc;
	if (is_null(s))
		return 0;
	if (s->p >= s->end || *s->p != '"')
		return fail(s, "want a string value");
	if (str(s, dst, cap, &trunc) < 0)
		return -1;
	if (trunc)
		return fail(s, "string value too long");
	return 0;
}

static int int_field(struct scan *s, long *dst)
{
	if (is_null(s))
		return 0;
	if (s->p >= s->end || (*s->p != '-' && (*s->p < '0' || *s->p > '9')))
		return fail(s, "want a number value");
	return num(s, dst);
}

static int keeper_field(struct scan *s, const char *key, void *out)
{
	struct hk_keeper_req *r = out;
	if (strcasecmp(key, "v") == 0)
		return int_field(s, &r->v);
	if (strcasecmp(key, "op") == 0)
		return str_field(s, r->op, sizeof r->op);
	return skip(s);
}

int hk_parse_keeper_req(const char *buf, size_t n, struct hk_keeper_req *out, const char **err)
{
	struct scan s = {buf, buf + n, NULL, 0};
	memset(out, 0, sizeof *out);
	if (object(&s, keeper_field, out) < 0) {
		*err = s.err;
		return -1;
	}
	return 0;
}

static int port_field(struct scan *s, const char *key, void *out)
{
	struct hk_port_req *r = out;
	if (strcasecmp(key, "Type") == 0)
		return str_field(s, r->type, sizeof r->type);
	if (strcasecmp(key, "Proto") == 0)
		return str_field(s, r->proto, sizeof r->proto);
	if (strcasecmp(key, "IP") == 0)
		return str_field(s, r->ip, sizeof r->ip);
	if (strcasecmp(key, "Port") == 0)
		return int_field(s, &r->port);
	if (strcasecmp(key, "ParentIP") == 0)
		return str_field(s, r->parent_ip, sizeof r->parent_ip);
	if (strcasecmp(key, "HostGatewayIP") == 0)
		return str_field(s, r->host_gateway_ip, sizeof r->host_gateway_ip);
	if (strcasecmp(key, "SourceIP") == 0)
		return str_field(s, r->source_ip, sizeof r->source_ip);
	if (strcasecmp(key, "SourcePort") == 0)
		return int_field(s, &r->source_port);
	return skip(s);
}

int hk_parse_port_req(const char *buf, size_t n, struct hk_port_req *out, const char **err)
{
	struct scan s = {buf, buf + n, NULL, 0};
	memset(out, 0, sizeof *out);
	if (n > HK_MAX_MSG) {
		*err = "message too long";
		return -1;
	}
	if (object(&s, port_field, out) < 0) {
		*err = s.err;
		return -1;
	}
	ws(&s);
	if (s.p != s.end) {
		*err = "data after the object";
		return -1;
	}
	return 0;
}

long hk_json_string(char *dst, size_t cap, const char *src)
{
	size_t n = 0;
	const unsigned char *p = (const unsigned char *)src;
#define OUT(c)                      \
	do {                        \
		if (n + 1 >= cap)   \
			return -1;  \
		dst[n++] = (char)(c); \
	} while (0)
	OUT('"');
	for (; *p; p++) {
		if (*p == '"' || *p == '\\') {
			OUT('\\');
			OUT(*p);
		} else if (*p < 0x20) {
			char esc[7];
			snprintf(esc, sizeof esc, "\\u%04x", *p);
			for (int i = 0; i < 6; i++)
				OUT(esc[i]);
		} else {
			OUT(*p);
		}
	}
	OUT('"');
#undef OUT
	dst[n] = '\0';
	return (long)n;
}
