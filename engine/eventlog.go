package engine

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	eventtypes "github.com/moby/moby/api/types/events"
	mounttypes "github.com/moby/moby/api/types/mount"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/events"
)

// EventsRequest is GET /events.
type EventsRequest struct {
	// Since and Until are timestamps as Docker takes them (Unix seconds
	// with an optional fraction, RFC 3339, or a duration before now).
	Since, Until string
	Filters      string // the raw filters JSON
}

// Events answers GET /events: the kept events since Since, then each new
// one, until Until or until ctx ends. begin is called once the request is
// found valid, before the first event; send is called for each event that
// passes the filters, in order. A client too slow to take the events ends
// its stream.
func (e *Engine) Events(ctx context.Context, req EventsRequest, begin func(), send func(eventtypes.Message) error) error {
	f, err := container.ParseFiltersOf(req.Filters, events.FilterKeys)
	if err != nil {
		return err
	}
	now := time.Now()
	var since, until time.Time
	if req.Since != "" {
		if since, err = container.ParseTimestamp(req.Since, now); err != nil {
			return err
		}
	}
	if req.Until != "" {
		if until, err = container.ParseTimestamp(req.Until, now); err != nil {
			return err
		}
		if !since.IsZero() && since.After(until) {
			return errdefs.ErrInvalidArgument.WithMessage("`since` time cannot be after `until` time")
		}
	}
	past, next, stop := e.events.Follow(since)
	defer stop()
	begin()
	pass := func(m eventtypes.Message) (more bool, err error) {
		if !until.IsZero() && m.TimeNano > until.UnixNano() {
			return false, nil
		}
		if events.Match(f, m) {
			return true, send(m)
		}
		return true, nil
	}
	for _, m := range past {
		if more, err := pass(m); !more || err != nil {
			return err
		}
	}
	var end <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		end = t.C
	}
	for {
		select {
		case m, ok := <-next:
			if !ok {
				return nil
			}
			if more, err := pass(m); !more || err != nil {
				return err
			}
		case <-end:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// containerEvent publishes action of c, with its name, image and labels
// as Docker's container events have them, and extra.
func (e *Engine) containerEvent(c *container.Container, action eventtypes.Action, extra map[string]string) {
	attrs := map[string]string{}
	if c.Config != nil {
		maps.Copy(attrs, c.Config.Labels)
	}
	attrs["name"] = strings.TrimPrefix(c.Name, "/")
	attrs["image"] = c.Image
	maps.Copy(attrs, extra)
	e.events.Publish(eventtypes.ContainerEventType, action, c.ID, attrs)
}

// containerEventByID publishes action of the container id, if it is
// still there.
func (e *Engine) containerEventByID(ctx context.Context, id string, action eventtypes.Action, extra map[string]string) {
	if c, err := e.containers.Get(ctx, id); err == nil {
		e.containerEvent(c, action, extra)
	}
}

// runEvents publishes what a container's start (or end) does to its
// networks and volumes, as Docker does: network connect and volume mount
// (network disconnect and volume unmount).
func (e *Engine) runEvents(c *container.Container, start bool) {
	netAction, volAction := eventtypes.ActionConnect, eventtypes.ActionMount
	if !start {
		netAction, volAction = eventtypes.ActionDisconnect, eventtypes.ActionUnmount
	}
	if ns := c.NetworkSettings; ns != nil {
		for _, name := range slices.Sorted(maps.Keys(ns.Networks)) {
			if ep := ns.Networks[name]; ep != nil && ep.NetworkID != "" {
				e.networkEvent(netAction, ep.NetworkID, name, map[string]string{"container": c.ID})
			}
		}
	}
	for _, m := range c.Mounts {
		if m.Type != mounttypes.TypeVolume {
			continue
		}
		attrs := map[string]string{"driver": localDriver, "container": c.ID}
		if start {
			attrs["destination"] = m.Destination
			attrs["read/write"] = strconv.FormatBool(m.RW)
			attrs["propagation"] = string(m.Propagation)
		}
		e.events.Publish(eventtypes.VolumeEventType, volAction, m.Name, attrs)
	}
}

// imageEvent publishes action of the image id, named name.
func (e *Engine) imageEvent(action eventtypes.Action, id, name string) {
	e.events.Publish(eventtypes.ImageEventType, action, id, map[string]string{"name": name})
}
