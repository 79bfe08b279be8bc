package images

import (
	"context"
	"errors"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/registry"

	"github.com/hutch-engine/hutch/engine/imagestore/imagestoretest"
)

// searchStore answers SearchRegistry with a fixed list and counts calls.
type searchStore struct {
	*imagestoretest.Fake
	calls int
}

func (s *searchStore) SearchRegistry(context.Context, string, int, registry.AuthConfig) ([]registry.SearchResult, error) {
	s.calls++
	return []registry.SearchResult{
		{Name: "busybox", IsOfficial: true, StarCount: 3000},
		{Name: "someone/busybox", StarCount: 12},
		{Name: "other/busybox"},
	}, nil
}

func TestSearchImagesFilters(t *testing.T) {
	tests := []struct {
		filters string
		want    []string // names, nil for an error
		message string   // the error's, when one is given
		asks    bool     // whether the registry is asked
	}{
		{filters: "", want: []string{"busybox", "someone/busybox", "other/busybox"}, asks: true},
		{filters: `{"is-official":["true"]}`, want: []string{"busybox"}, asks: true},
		{filters: `{"is-official":["0"]}`, want: []string{"someone/busybox", "other/busybox"}, asks: true},
		{filters: `{"stars":["10","2"]}`, want: []string{"busybox", "someone/busybox"}, asks: true},
		{filters: `{"stars":["13"],"is-official":["false"]}`, want: []string{}, asks: true},
		{filters: `{"is-automated":["true"]}`, want: []string{}},
		{filters: `{"is-automated":["false"]}`, want: []string{"busybox", "someone/busybox", "other/busybox"}, asks: true},
		{filters: `{"is-official":["maybe"]}`, message: "invalid filter 'is-official=[maybe]'"},
		{filters: `{"is-official":["true","false"]}`, message: "invalid filter 'is-official=[false true]'"},
		{filters: `{"stars":["many"]}`, message: `invalid filter 'stars=many': strconv.Atoi: parsing "many": invalid syntax`},
		{filters: `{"label":["a"]}`, message: "invalid filter 'label'"},
		{filters: `{`},
	}
	for _, tc := range tests {
		t.Run(tc.filters, func(t *testing.T) {
			store := &searchStore{Fake: imagestoretest.New()}
			e := New(Options{Store: store})
			got, err := e.SearchImages(context.Background(), "busybox", 0, tc.filters, registry.AuthConfig{})
			if (store.calls > 0) != tc.asks {
				t.Errorf("registry asked %d times, want asked=%v", store.calls, tc.asks)
			}
			if tc.want == nil {
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Fatalf("error %v, want an invalid argument", err)
				}
				if tc.message != "" && err.Error() != tc.message {
					t.Fatalf("error %q, want %q", err, tc.message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for _, r := range got {
				names = append(names, r.Name)
			}
			if len(names) != len(tc.want) {
				t.Fatalf("got %q, want %q", names, tc.want)
			}
			for i := range names {
				if names[i] != tc.want[i] {
					t.Fatalf("got %q, want %q", names, tc.want)
				}
			}
		})
	}
}
