package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
)

type versionKey struct{}

// APIVersion returns the API version of the request being served: the one in
// its /v<version>/ prefix, or MaxAPIVersion for unversioned paths. Handlers
// use it to keep the wire format of older versions.
func APIVersion(ctx context.Context) string {
	if v, ok := ctx.Value(versionKey{}).(string); ok {
		return v
	}
	return MaxAPIVersion
}

// stripVersion removes a /v<version> prefix so one ServeMux pattern serves
// every version, and keeps the version in the context. The version is checked
// later, only for requests that match a route (checkRequestVersion): Docker
// answers /v1.23/nope with 404, not with "too old".
func stripVersion(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, rest, ok := splitVersion(r.URL.Path)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), versionKey{}, v))
		u := *r.URL
		u.Path = rest
		u.RawPath = ""
		if r.URL.RawPath != "" {
			// Keep escapes such as %2F in the rest of the path: ServeMux matches
			// the escaped form. A RawPath that does not encode Path is ignored
			// by EscapedPath, so a mismatch here is harmless.
			if seg, erest, ok := cutSegment(r.URL.RawPath); ok {
				if dec, err := url.PathUnescape(seg); err == nil && dec == "v"+v {
					u.RawPath = erest
				}
			}
		}
		r.URL = &u
		next.ServeHTTP(w, r)
	})
}

// splitVersion splits "/v1.41/info" into "1.41" and "/info". Like Docker's
// route pattern /v{version:[0-9.]+}/..., the version is any non-empty run of
// digits and dots followed by a slash; anything else (/vabc/info, /v1.41) is
// not a version prefix and is routed, and so answered 404, as it is.
func splitVersion(p string) (version, rest string, ok bool) {
	seg, rest, ok := cutSegment(p)
	if !ok || len(seg) < 2 || seg[0] != 'v' {
		return "", p, false
	}
	for _, c := range seg[1:] {
		if c != '.' && (c < '0' || c > '9') {
			return "", p, false
		}
	}
	return seg[1:], rest, true
}

// cutSegment splits "/a/b/c" into "a" and "/b/c"; ok is false when p has no
// second slash.
func cutSegment(p string) (seg, rest string, ok bool) {
	if !strings.HasPrefix(p, "/") {
		return "", p, false
	}
	i := strings.IndexByte(p[1:], '/')
	if i < 0 {
		return "", p, false
	}
	return p[1 : 1+i], p[1+i:], true
}

// checkVersion returns an InvalidArgument error with Docker's message when v
// is outside [MinAPIVersion, MaxAPIVersion].
func checkVersion(v string) error {
	if compareVersions(v, MinAPIVersion) < 0 {
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf(
			"client version %s is too old. Minimum supported API version is %s, please upgrade your client to a newer version",
			v, MinAPIVersion))
	}
	if compareVersions(v, MaxAPIVersion) > 0 {
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf(
			"client version %s is too new. Maximum supported API version is %s", v, MaxAPIVersion))
	}
	return nil
}

// checkRequestVersion refuses a request whose version is out of range and
// reports whether it may proceed.
func checkRequestVersion(w http.ResponseWriter, r *http.Request) bool {
	v := APIVersion(r.Context())
	err := checkVersion(v)
	if err == nil {
		return true
	}
	if compareVersions(v, MinAPIVersion) < 0 {
		// Docker answers clients older than 1.24 in plain text, which is what
		// they expect; newer clients accept both forms.
		http.Error(w, errorMessage(err), errorStatus(err))
		return false
	}
	httpError(w, err)
	return false
}

// compareVersions compares dotted versions field by field as Docker does:
// missing or empty fields count as 0, so "1.24" == "1.24.0" < "1.24.1", and
// a field too big for an int counts as the largest int (strconv.Atoi's value
// with ErrRange), so "1.99999999999999999999" is too new, not too old.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		x, y := versionField(as, i), versionField(bs, i)
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func versionField(fields []string, i int) int {
	if i >= len(fields) {
		return 0
	}
	n, _ := strconv.Atoi(fields[i]) // 0 on syntax errors, clamped on overflow
	return n
}

// versionLess reports whether API version a is older than b; handlers use it
// as versionLess(APIVersion(ctx), "1.44").
func versionLess(a, b string) bool { return compareVersions(a, b) < 0 }
