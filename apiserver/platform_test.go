package apiserver

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/containerd/platforms"
	"github.com/moby/moby/api/types/common"
)

// TestPlatformParameters: every image endpoint that takes a platform
// refuses a bad one with Docker's 400 and message before calling the
// engine, reads it only from the API version that has it, and hands a
// good one on.
func TestPlatformParameters(t *testing.T) {
	q := url.QueryEscape
	arm := q(`{"os":"linux","architecture":"arm64"}`)
	tests := []struct {
		name, method, target string
		call                 string // the backend call made, "" for none
		status               int
		message              string
	}{
		{"pull, unknown os", "POST", "/images/create?fromImage=busybox&platform=foobar", "", 400,
			`"foobar": unknown operating system or architecture: invalid argument`},
		{"pull, empty component", "POST", "/images/create?fromImage=busybox&platform=linux/", "", 400,
			`"" is an invalid component of "linux/": platform specifier component must match "^[A-Za-z0-9_.-]+$": invalid argument`},
		{"pull, before 1.32 ignored", "POST", "/v1.31/images/create?fromImage=busybox&platform=foobar", "ImagePull(busybox,,,)", 200, ""},
		{"pull, normalised", "POST", "/images/create?fromImage=busybox&platform=linux/aarch64", "ImagePull(busybox,,,,linux/arm64)", 200, ""},
		{"import, blank os", "POST", "/images/create?fromSrc=-&platform=" + q("   "), "", 400, `is an invalid OS component of`},
		{"inspect, bad json", "GET", "/images/busybox/json?platform=linux", "", 400,
			"failed to parse platform: invalid character 'l' looking for beginning of value"},
		{"inspect, no arch", "GET", "/images/busybox/json?platform=" + q(`{"os":"linux"}`), "", 400, "both OS and Architecture must be provided"},
		{"inspect, only optional", "GET", "/images/busybox/json?platform=" + q(`{"variant":"v8"}`), "", 400,
			"optional platform fields provided, but OS and Architecture are missing"},
		{"inspect, manifests and platform", "GET", "/images/busybox/json?manifests=1&platform=" + arm, "", 400,
			"conflicting options: manifests and platform options cannot both be set"},
		{"inspect, platform", "GET", "/images/busybox/json?platform=" + arm, "ImageInspect(busybox,linux/arm64)", 200, ""},
		{"inspect, before 1.49 ignored", "GET", "/v1.48/images/busybox/json?platform=linux", "ImageInspect(busybox)", 200, ""},
		{"history, bad", "GET", "/images/busybox/history?platform=" + q(`{"architecture":"arm64"}`), "", 400, "both OS and Architecture must be provided"},
		{"history, platform", "GET", "/images/busybox/history?platform=" + arm, "ImageHistory(busybox,linux/arm64)", 200, ""},
		{"push, bad", "POST", "/images/busybox/push?tag=1&platform=x", "", 400, "failed to parse platform: invalid character 'x' looking for beginning of value"},
		{"save, bad", "GET", "/images/get?names=a&platform=" + q(`{}`), "", 400, "both OS and Architecture must be provided"},
		{"save, two before 1.52", "GET", "/v1.51/images/get?names=a&platform=" + arm + "&platform=" + arm, "", 400,
			"multiple platform parameters are not supported in this API version; use API version 1.52 or later"},
		{"save, two", "GET", "/images/get?names=a&platform=" + arm + "&platform=" + q(`{"os":"linux","architecture":"amd64"}`), `ImageSave(["a"],linux/arm64,linux/amd64)`, 200, ""},
		{"save, platform", "GET", "/images/a/get?platform=" + arm, `ImageSave(["a"],linux/arm64)`, 200, ""},
		{"load, bad", "POST", "/images/load?platform=" + q(`{"os":""}`), "", 400, "both OS and Architecture must be provided"},
		{"load, platform", "POST", "/images/load?platform=" + arm, "ImageLoad(true,,linux/arm64)", 200, ""},
		{"rmi, bad", "DELETE", "/images/busybox?platforms=" + q(`[]`), "", 400, "failed to parse platform: json: cannot unmarshal array into Go value of type v1.Platform"},
		{"rmi, two", "DELETE", "/images/busybox?platforms=" + arm + "&platforms=" + arm, "ImageRemove(busybox,false,false,linux/arm64,linux/arm64)", 200, ""},
		{"rmi, platform", "DELETE", "/images/busybox?platforms=" + arm, "ImageRemove(busybox,false,false,linux/arm64)", 200, ""},
		{"build, unknown os", "POST", "/build?platform=foobar", "", 400, `"foobar": unknown operating system or architecture: invalid argument`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &imageFake{}
			s := New(fake, Options{Logger: testLogger(t)})
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, strings.NewReader("")))
			if fake.call != tc.call {
				t.Errorf("backend call %q, want %q", fake.call, tc.call)
			}
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			if tc.message == "" {
				return
			}
			var e common.ErrorResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || !strings.Contains(e.Message, tc.message) {
				t.Errorf("error body %s, want message %q", rec.Body, tc.message)
			}
		})
	}
}

// TestImageListIdentityNeedsManifests: from API 1.54, identity without
// manifests is refused as Docker refuses it; before, it is not read.
func TestImageListIdentityNeedsManifests(t *testing.T) {
	for target, status := range map[string]int{
		"/v1.54/images/json?identity=1":             400,
		"/images/json?identity=true&manifests=0":    400,
		"/v1.54/images/json?identity=1&manifests=1": 200,
		"/v1.53/images/json?identity=1":             200,
		"/images/json?identity=0":                   200,
	} {
		fake := &imageFake{}
		s := New(fake, Options{Logger: testLogger(t)})
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		if rec.Code != status {
			t.Errorf("%s: status %d, want %d; body %s", target, rec.Code, status, rec.Body)
		}
		if status == 400 && (fake.call != "" || !strings.Contains(rec.Body.String(), `"message":"conflicting options: identity requires manifests=1"`)) {
			t.Errorf("%s: call %q, body %s", target, fake.call, rec.Body)
		}
	}
}

// TestInvalidVerbatim: the class comes from the type, the message is the
// parser's, its ": invalid argument" included, as Docker sends it.
func TestInvalidVerbatim(t *testing.T) {
	_, perr := platforms.Parse("foobar")
	err := invalidVerbatim{perr}
	if errorStatus(err) != 400 || errorMessage(err) != `"foobar": unknown operating system or architecture: invalid argument` {
		t.Errorf("status %d, message %q", errorStatus(err), errorMessage(err))
	}
}
