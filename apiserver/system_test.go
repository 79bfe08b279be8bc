package apiserver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/moby/moby/api/types/system"
)

// engineVersion is a backend whose /version has the engine component, as
// the engine's has.
type engineVersion struct{ fakeBackend }

func (engineVersion) Version(context.Context) (*system.VersionResponse, error) {
	return &system.VersionResponse{Components: []system.ComponentVersion{{Name: "Engine", Details: map[string]string{"ApiVersion": "bogus"}}}}, nil
}

// TestExperimentalStated: /version (top level and the engine's Details)
// and /info state the API server's experimental mode, as
// Docker-Experimental does.
func TestExperimentalStated(t *testing.T) {
	for _, experimental := range []bool{false, true} {
		s := New(&engineVersion{}, Options{Experimental: experimental, Logger: testLogger(t)})
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/version", nil))
		var v system.VersionResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "false", true: "true"}[experimental]
		if d := v.Components[0].Details; v.Experimental != experimental || d["Experimental"] != want || d["ApiVersion"] != MaxAPIVersion {
			t.Errorf("experimental %v: /version %+v", experimental, v)
		}
		rec = httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/info", nil))
		var info system.Info
		if err := json.Unmarshal(rec.Body.Bytes(), &info); err != nil || info.ExperimentalBuild != experimental {
			t.Errorf("experimental %v: /info %s", experimental, rec.Body)
		}
	}
}
