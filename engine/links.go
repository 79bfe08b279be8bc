package engine

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine/container"
)

// Legacy links (--link name[:alias], compose's links:) on the default
// bridge: at each start, the linked container's address goes into
// /etc/hosts under the alias, the container's hostname and its name, as
// Docker writes them; the linked container must run. Each link gives the
// linked container the name /parent/alias, which docker ps lists and the
// name filter matches, and inspect shows the links as
// /linked:/parent/alias. Docker 29 sets the links' environment variables
// (ALIAS_PORT, ALIAS_NAME, ALIAS_ENV_…) only when its daemon runs with
// DOCKER_KEEP_DEPRECATED_LEGACY_LINKS_ENV_VARS=1, and so does hutch
// (Options.LegacyLinkEnv). On a user network the CLI sends --link as the
// endpoint's links: aliases the embedded DNS answers for that container
// alone (engine/network). Unlike Docker, a link follows the name: a
// linked container renamed is not found at the next start.

// defaultBridge is the network a container without --network is on.
const defaultBridge = "bridge"

// onDefaultBridge reports whether a container of this network mode is on
// the default bridge, where links are Docker's legacy links.
func onDefaultBridge(mode containertypes.NetworkMode) bool {
	return container.OnDefaultBridge(mode)
}

// checkLinks checks at create what the container links to: each must
// exist and not use the host's network.
func (e *Engine) checkLinks(ctx context.Context, hc *containertypes.HostConfig) error {
	if !onDefaultBridge(hc.NetworkMode) {
		return nil
	}
	for _, l := range hc.Links {
		name, _, err := container.ParseLink(l)
		if err != nil {
			return err
		}
		if _, err := e.linkedContainer(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// linkedContainer is the container a link names, or, when that one uses
// another's network (--network container:), that other one.
func (e *Engine) linkedContainer(ctx context.Context, name string) (*container.Container, error) {
	for {
		c, err := e.containers.Get(ctx, name)
		if errors.Is(err, errdefs.ErrNotFound) {
			// Docker's 400: a 404 would make the CLI pull the image.
			return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("could not get container for %s: %v", name, err))
		}
		if err != nil {
			return nil, err
		}
		mode := c.HostConfig.NetworkMode
		switch {
		case mode.IsContainer():
			name = mode.ConnectedContainer()
		case mode.IsHost():
			return nil, errdefs.ErrInvalidArgument.WithMessage("conflicting options: host type networking can't be used with links. This would result in undefined behavior")
		default:
			return c, nil
		}
	}
}

// legacyLinks are, at c's start, the /etc/hosts lines of its links and,
// when the daemon keeps them, their environment variables.
func (e *Engine) legacyLinks(ctx context.Context, c *container.Container) (hosts, env []string, err error) {
	if !onDefaultBridge(c.HostConfig.NetworkMode) {
		return nil, nil, nil
	}
	for _, l := range c.HostConfig.Links {
		name, alias, err := container.ParseLink(l)
		if err != nil {
			return nil, nil, err
		}
		child, err := e.linkedContainer(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		if !child.State.Running() {
			// Docker's 500.
			return nil, nil, errdefs.ErrUnknown.WithMessage(fmt.Sprintf("Cannot link to a non running container: %s AS %s/%s", child.Name, c.Name, alias))
		}
		ip := ""
		if ns := child.NetworkSettings; ns != nil {
			if s := ns.Networks[defaultBridge]; s != nil && s.IPAddress.IsValid() {
				ip = s.IPAddress.Unmap().String()
			}
		}
		if ip == "" {
			return nil, nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("Cannot link to %s, as it does not belong to the default network", child.Name))
		}
		names := alias + " " + child.Config.Hostname
		if own := strings.TrimPrefix(child.Name, "/"); alias != own {
			names += " " + own
		}
		hosts = append(hosts, ip+"\t"+names)
		if e.opts.LegacyLinkEnv {
			env = append(env, linkEnv(path.Join(c.Name, alias), ip, child.Config)...)
		}
	}
	return hosts, env, nil
}

// inspectLinks are c's links as Docker's inspect shows them,
// /linked:/parent/alias, for a container on the default bridge; elsewhere
// links are no legacy links, and inspect shows none.
func (e *Engine) inspectLinks(ctx context.Context, c *container.Container) []string {
	if c.HostConfig == nil || !onDefaultBridge(c.HostConfig.NetworkMode) {
		return nil
	}
	var out []string
	for _, l := range c.HostConfig.Links {
		name, alias, err := container.ParseLink(l)
		if err != nil {
			continue
		}
		// The link shows the container it reaches, by the name that
		// container has now; one gone since keeps the name linked to.
		linked := "/" + name
		if child, err := e.linkedContainer(ctx, name); err == nil {
			linked = child.Name
		}
		out = append(out, linked+":"+path.Join(c.Name, alias))
	}
	return out
}

// RemoveLink is docker rm --link /parent/alias: the parent's link of that
// alias is gone (its /etc/hosts line goes at its next start); the linked
// container stays.
func (e *Engine) RemoveLink(ctx context.Context, name string) error {
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	parentName, alias := path.Split(name)
	if parentName == "/" {
		return errdefs.ErrInvalidArgument.WithMessage("Conflict, cannot remove the default link name of the container")
	}
	parentName = strings.TrimSuffix(parentName, "/")
	parent, err := e.containers.Get(ctx, parentName)
	if err != nil {
		return errdefs.ErrNotFound.WithMessage(fmt.Sprintf("Cannot get parent %s for link name %s", parentName, name))
	}
	found := false
	err = e.containers.Update(ctx, parent.ID, func(c *container.Container) error {
		var kept []string
		for _, l := range c.HostConfig.Links {
			if _, a, err := container.ParseLink(l); err == nil && a == alias {
				found = true
				continue
			}
			kept = append(kept, l)
		}
		if !found {
			return errdefs.ErrNotFound.WithMessage(fmt.Sprintf("Link %s does not exist", name))
		}
		c.HostConfig.Links = kept
		return nil
	})
	return err
}
