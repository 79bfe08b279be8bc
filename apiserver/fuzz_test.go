package apiserver

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/registry"
)

// FuzzDecodeJSON feeds arbitrary bodies and content types to the request
// decoder, into the request types with the most structure (typed
// addresses, ports, maps): it succeeds or answers InvalidArgument (400),
// never anything else.
func FuzzDecodeJSON(f *testing.F) {
	for _, b := range []string{
		`{"Name":"n","IPAM":{"Config":[{"Subnet":"10.1.0.0/24","Gateway":"10.1.0.1","IPRange":"10.1.0.0/25"}]}}`,
		`{"Container":"c","EndpointConfig":{"IPAMConfig":{"IPv4Address":"10.1.0.5"},"Aliases":["a"],"MacAddress":"02:42:ac:11:00:02"}}`,
		`{"Name":5}`, `{"Name":`, `{} {}`, `[]`, `null`, ``, "\x00", `{"IPAM":{"Config":[{"Subnet":"300.0.0.0/8"}]}}`,
	} {
		f.Add(b, "application/json")
	}
	f.Add(`{"Name":"x"}`, "text/plain")
	f.Add(`{"Name":"x"}`, "application/json; charset=utf-8")
	f.Add(`{"Name":"x"}`, ";;")
	f.Fuzz(func(t *testing.T, body, contentType string) {
		for _, v := range []any{&network.CreateRequest{}, &network.ConnectRequest{}, &network.DisconnectRequest{}} {
			req := httptest.NewRequest(http.MethodPost, "/networks/create", strings.NewReader(body))
			req.Header.Set("Content-Type", contentType)
			err := decodeJSON(httptest.NewRecorder(), req, v)
			if err != nil && !errdefs.IsInvalidArgument(err) {
				t.Fatalf("body %q, Content-Type %q into %T: %v (not InvalidArgument)", body, contentType, v, err)
			}
			if err != nil && errorStatus(err) != http.StatusBadRequest {
				t.Fatalf("body %q: status %d", body, errorStatus(err))
			}
		}
	})
}

// FuzzRegistryAuth decodes arbitrary X-Registry-Auth headers: the result
// is credentials or InvalidArgument (400) with one fixed message, so the
// error never repeats the header (it may hold a password).
func FuzzRegistryAuth(f *testing.F) {
	for _, js := range []string{
		`{"username":"u","password":"p","serveraddress":"r.example"}`,
		`{"identitytoken":"t"}`, `{}`, `null`, `[]`, `{"username":5}`, `{`,
	} {
		f.Add(base64.URLEncoding.EncodeToString([]byte(js)))
		f.Add(base64.StdEncoding.EncodeToString([]byte(js)))
		f.Add(js)
	}
	f.Add("!!!not-base64!!!")
	bad := httptest.NewRequest(http.MethodPost, "/images/create", nil)
	bad.Header[registry.AuthHeader] = []string{"!"}
	_, want := registryAuth(bad)
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest(http.MethodPost, "/images/create?fromImage=x", nil)
		req.Header[registry.AuthHeader] = []string{header}
		_, err := registryAuth(req)
		if err == nil {
			return
		}
		if !errdefs.IsInvalidArgument(err) {
			t.Fatalf("header %q: %v (not InvalidArgument)", header, err)
		}
		if err.Error() != want.Error() {
			t.Fatalf("the error depends on the header: %v", err)
		}
	})
}
