// Package images is the engine's image service: the image endpoints of
// Docker's API (pull, push, list, inspect, history, tag, remove, prune,
// import, load, save, login, distribution, search) with Docker's rules for
// names, filters, conflicts and events, over an imagestore.Store. It knows
// the engine's containers only through their records (which images are in
// use) and a hook that quiets the rootfs pool before a deletion.
package images

import (
	"context"
	"log/slog"
	"slices"
	"strconv"

	"github.com/containerd/errdefs"
	eventtypes "github.com/moby/moby/api/types/events"
	mounttypes "github.com/moby/moby/api/types/mount"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/events"
	"github.com/hutch-engine/hutch/engine/imagestore"
)

// Options are the service's parts.
type Options struct {
	// Store is the image and layer store; nil answers every call with
	// errdefs.ErrUnavailable.
	Store imagestore.Store
	// Containers are the engine's container records: an image a
	// container is made from or mounts is in use.
	Containers *container.Store
	// Events receives the image events (pull, tag, untag, delete…).
	Events *events.Log
	// Quiesce prepares an image deletion (the engine's rootfs pool lets
	// go of the layers it keeps for reuse) and returns what ends it; nil
	// does nothing.
	Quiesce func() (done func())
	Log     *slog.Logger
}

// Service serves the image endpoints. Create it with New.
type Service struct {
	store      imagestore.Store
	containers *container.Store
	events     *events.Log
	quiesceFn  func() func()
	log        *slog.Logger
}

// New returns the image service of o.
func New(o Options) *Service {
	s := &Service{store: o.Store, containers: o.Containers, events: o.Events, quiesceFn: o.Quiesce, log: o.Log}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

func (s *Service) imageStore() (imagestore.Store, error) {
	if s.store == nil {
		return nil, errdefs.ErrUnavailable.WithMessage("no image store")
	}
	return s.store, nil
}

func (s *Service) quiesce() func() {
	if s.quiesceFn == nil {
		return func() {}
	}
	return s.quiesceFn()
}

func (s *Service) imageEvent(action eventtypes.Action, id, name string) {
	if s.events != nil {
		s.events.Publish(eventtypes.ImageEventType, action, id, map[string]string{"name": name})
	}
}

func (s *Service) pruneEvent(reclaimed uint64) {
	if s.events != nil {
		s.events.Publish(eventtypes.ImageEventType, eventtypes.ActionPrune, "", map[string]string{"reclaimed": strconv.FormatUint(reclaimed, 10)})
	}
}

// imageUsers maps image IDs to the containers made from them or mounting
// them (--mount type=image), as Docker counts an image in use.
func (s *Service) imageUsers(ctx context.Context) (map[string][]*container.Container, error) {
	if s.containers == nil {
		return map[string][]*container.Container{}, nil
	}
	list, err := s.containers.List(ctx, container.ListOptions{All: true})
	if err != nil {
		return nil, err
	}
	m := map[string][]*container.Container{}
	for _, c := range list {
		m[c.ImageID] = append(m[c.ImageID], c)
		for _, id := range MountedImages(c) {
			m[id] = append(m[id], c)
		}
	}
	return m, nil
}

// MountedImages are the IDs of the images c's image mounts show, other
// than its own image.
func MountedImages(c *container.Container) []string {
	var out []string
	for _, mp := range c.Mounts {
		if mp.Type == mounttypes.TypeImage && mp.Source != c.ImageID && !slices.Contains(out, mp.Source) {
			out = append(out, mp.Source)
		}
	}
	return out
}
