package buildkit

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	controlapi "github.com/moby/buildkit/api/services/control"
	"github.com/moby/buildkit/control"
	"github.com/moby/moby/api/types/build"

	"github.com/hutch-engine/hutch/engine/container"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// The build cache through Docker's API: the engine's /system/df asks for
// the records (proxy.CachePath), and POST /build/prune is proxied here.

// serveCache lists the cache records as Docker's build.CacheRecord.
func serveCache(ctrl *control.Controller, w http.ResponseWriter, r *http.Request) error {
	du, err := ctrl.DiskUsage(r.Context(), &controlapi.DiskUsageRequest{})
	if err != nil {
		return err
	}
	recs := make([]build.CacheRecord, 0, len(du.Record))
	for _, u := range du.Record {
		recs = append(recs, cacheRecord(u))
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(recs)
}

func cacheRecord(u *controlapi.UsageRecord) build.CacheRecord {
	rec := build.CacheRecord{
		ID:          u.ID,
		Parents:     u.Parents,
		Type:        u.RecordType,
		Description: u.Description,
		InUse:       u.InUse,
		Shared:      u.Shared,
		Size:        u.Size,
		UsageCount:  int(u.UsageCount),
	}
	if u.CreatedAt != nil {
		rec.CreatedAt = u.CreatedAt.AsTime()
	}
	if u.LastUsedAt != nil {
		t := u.LastUsedAt.AsTime()
		rec.LastUsedAt = &t
	}
	return rec
}

// servePrune is Docker's POST /build/prune: the query's all, filters and
// space limits become BuildKit's prune, and the report lists what went.
func servePrune(ctrl *control.Controller, w http.ResponseWriter, r *http.Request) {
	req, err := pruneRequest(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	var report build.CachePruneReport
	report.CachesDeleted = []string{}
	stream := &sendStream[controlapi.UsageRecord]{ctx: r.Context(), send: func(u *controlapi.UsageRecord) {
		report.CachesDeleted = append(report.CachesDeleted, u.ID)
		report.SpaceReclaimed += uint64(u.Size)
	}}
	if err := ctrl.Prune(req, stream); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(report)
}

// cacheFilters are the fields Docker's build cache filters name, which
// BuildKit's prune filter takes as they are.
var cacheFilters = []string{"id", "parent", "type", "description", "inuse", "shared", "private"}

func pruneRequest(r *http.Request) (*controlapi.PruneRequest, error) {
	q := r.URL.Query()
	req := &controlapi.PruneRequest{}
	var err error
	if v := q.Get("all"); v != "" {
		if req.All, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("invalid all: %w", err)
		}
	}
	for key, dst := range map[string]*int64{
		"keep-storage": &req.ReservedSpace, "reserved-space": &req.ReservedSpace,
		"max-used-space": &req.MaxUsedSpace, "min-free-space": &req.MinFreeSpace,
	} {
		if v := q.Get(key); v != "" {
			if *dst, err = strconv.ParseInt(v, 10, 64); err != nil {
				return nil, fmt.Errorf("%s is not a number: %q", key, v)
			}
		}
	}
	filters, err := parseFilters(q.Get("filters"))
	if err != nil {
		return nil, err
	}
	var bk []string
	for key, values := range filters {
		switch {
		case key == "until" || key == "unused-for":
			if len(values) != 1 {
				return nil, fmt.Errorf("filters expect only one value for %q", key)
			}
			t, err := container.ParseTimestamp(values[0], time.Now())
			if err != nil {
				return nil, fmt.Errorf("\"until\" filter expects a duration (e.g., '24h') or a timestamp: %q", values[0])
			}
			req.KeepDuration = int64(time.Since(t))
		case slices.Contains(cacheFilters, key):
			switch len(values) {
			case 0:
				bk = append(bk, key)
			case 1:
				op := "=="
				if key == "id" {
					op = "~="
				}
				bk = append(bk, key+op+values[0])
			default:
				return nil, fmt.Errorf("filters expect only one value for %q", key)
			}
		default:
			return nil, fmt.Errorf("invalid filter %q", key)
		}
	}
	if len(bk) > 0 {
		slices.Sort(bk)
		req.Filter = []string{strings.Join(bk, ",")}
	}
	return req, nil
}

// parseFilters reads Docker's filters JSON: {"key":{"value":true}} (or
// the older {"key":["value"]}).
func parseFilters(s string) (map[string][]string, error) {
	out := map[string][]string{}
	if s == "" {
		return out, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, fmt.Errorf("invalid filters: %w", err)
	}
	for k, v := range raw {
		out[k] = []string{}
		var set map[string]bool
		if err := json.Unmarshal(v, &set); err == nil {
			for val, on := range set {
				if on {
					out[k] = append(out[k], val)
				}
			}
			continue
		}
		var list []string
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, fmt.Errorf("invalid filters: %q", k)
		}
		out[k] = list
	}
	return out, nil
}

func writeError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": err.Error()})
}

// sendStream is a server stream of BuildKit's controller called in
// process: each message sent goes to send.
type sendStream[T any] struct {
	ctx  context.Context
	send func(*T)
}

var _ grpc.ServerStreamingServer[controlapi.UsageRecord] = (*sendStream[controlapi.UsageRecord])(nil)

func (s *sendStream[T]) Send(m *T) error              { s.send(m); return nil }
func (s *sendStream[T]) SetHeader(metadata.MD) error  { return nil }
func (s *sendStream[T]) SendHeader(metadata.MD) error { return nil }
func (s *sendStream[T]) SetTrailer(metadata.MD)       {}
func (s *sendStream[T]) Context() context.Context     { return s.ctx }
func (s *sendStream[T]) RecvMsg(any) error            { return nil }
func (s *sendStream[T]) SendMsg(m any) error {
	if v, ok := m.(*T); ok {
		s.send(v)
	}
	return nil
}
