package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/containerd/platforms"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Docker's endpoints take a platform in two forms: pull, import and build
// a specifier ("linux/arm64/v8"), parsed by containerd's platforms
// package; inspect, history, push, save, load and rmi the JSON of an OCI
// platform. Each is read only from the API version that introduced it;
// older clients' values are ignored, as Docker ignores them.

// specifierPlatform parses the platform parameter of pull, import and
// build (API 1.32 and later) as Docker does: "" is none, anything
// containerd cannot parse is refused with its message.
func specifierPlatform(r *http.Request) (*ocispec.Platform, error) {
	v := r.URL.Query().Get("platform")
	if v == "" || versionLess(APIVersion(r.Context()), "1.32") {
		return nil, nil
	}
	p, err := platforms.Parse(v)
	if err != nil {
		// The message keeps the parser's ": invalid argument" ending, as
		// Docker's does.
		return nil, invalidVerbatim{err}
	}
	return &p, nil
}

// formatPlatform is the specifier of p for the engine's requests, "" for
// none.
func formatPlatform(p *ocispec.Platform) string {
	if p == nil {
		return ""
	}
	return platforms.FormatAll(*p)
}

// jsonPlatform decodes one platform in Docker's JSON form (the platform
// parameter of inspect, history and push): OS and architecture are
// required.
func jsonPlatform(v string) (*ocispec.Platform, error) {
	var p ocispec.Platform
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return nil, invalidVerbatim{fmt.Errorf("failed to parse platform: %w", err)}
	}
	optional := p.Variant != "" || p.OSVersion != "" || len(p.OSFeatures) > 0
	if p.OS == "" && p.Architecture == "" && optional {
		return nil, invalidVerbatim{errors.New("optional platform fields provided, but OS and Architecture are missing")}
	}
	if p.OS == "" || p.Architecture == "" {
		return nil, invalidVerbatim{errors.New("both OS and Architecture must be provided")}
	}
	return &p, nil
}

// queryJSONPlatform reads the JSON platform parameter key from API version
// since on: nil when absent.
func queryJSONPlatform(r *http.Request, key, since string) (*ocispec.Platform, error) {
	v := r.URL.Query().Get(key)
	if v == "" || versionLess(APIVersion(r.Context()), since) {
		return nil, nil
	}
	return jsonPlatform(v)
}

// platformList reads the repeatable JSON platform parameter of save and
// load (API 1.48 and later; several from 1.52 on, as Docker).
func platformList(r *http.Request) ([]ocispec.Platform, error) {
	v := APIVersion(r.Context())
	values := r.URL.Query()["platform"]
	if len(values) == 0 || versionLess(v, "1.48") {
		return nil, nil
	}
	if len(values) > 1 && versionLess(v, "1.52") {
		return nil, invalidVerbatim{errors.New("multiple platform parameters are not supported in this API version; use API version 1.52 or later")}
	}
	return jsonPlatforms(values)
}

// jsonPlatforms parses each of values as Docker's JSON platform.
func jsonPlatforms(values []string) ([]ocispec.Platform, error) {
	out := make([]ocispec.Platform, 0, len(values))
	for _, s := range values {
		p, err := jsonPlatform(s)
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, nil
}

// removePlatforms reads the platforms parameter of DELETE /images/{name}
// (API 1.50 and later).
func removePlatforms(r *http.Request) ([]ocispec.Platform, error) {
	values := r.URL.Query()["platforms"]
	if len(values) == 0 || versionLess(APIVersion(r.Context()), "1.50") {
		return nil, nil
	}
	return jsonPlatforms(values)
}
