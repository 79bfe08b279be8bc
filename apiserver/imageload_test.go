package apiserver

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

// TestImageLoadErrorsInStream: a load that fails is answered 200 with the
// error in the stream, quiet or not, as Docker answers it; a bad
// parameter is still a plain 400.
func TestImageLoadErrorsInStream(t *testing.T) {
	for _, target := range []string{"/images/load", "/images/load?quiet=0"} {
		fake := &imageFake{err: fmt.Errorf("invalid image archive: unexpected EOF%.0w", errdefs.ErrInvalidArgument)}
		s := New(fake, Options{Logger: testLogger(t)})
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", target, strings.NewReader("garbage")))
		want := `{"errorDetail":{"message":"invalid image archive: unexpected EOF"},"error":"invalid image archive: unexpected EOF"}` + "\n"
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != want {
			t.Errorf("%s = %d %q %s", target, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
	}
	s := New(&imageFake{}, Options{Logger: testLogger(t)})
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/images/load?platform=x", strings.NewReader("")))
	if rec.Code != 400 {
		t.Errorf("load with a bad platform = %d %s", rec.Code, rec.Body)
	}
}
