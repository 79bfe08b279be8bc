package swarm

import (
	"github.com/moby/swarmkit/v2/api"
	"github.com/moby/swarmkit/v2/manager/allocator/networkallocator"
)

// noOverlay is SwarmKit's network provider for hutch: no overlay networks
// (a service's networks are the engine's own, see networks.go), and the
// ingress network SwarmKit makes for itself gets no attachments: nothing
// is published through it (ingress ports are refused).
type noOverlay struct{ networkallocator.InertProvider }

func (noOverlay) NewAllocator(*networkallocator.Config) (networkallocator.NetworkAllocator, error) {
	return noAttachments{}, nil
}

// noAttachments is SwarmKit's inert allocator whose node attachments
// (to the ingress network) are made without addresses, rather than
// failing again at every node event.
type noAttachments struct{ networkallocator.Inert }

func (noAttachments) AllocateAttachment(*api.Node, *api.NetworkAttachment) error { return nil }

func (noAttachments) IsAttachmentAllocated(*api.Node, *api.NetworkAttachment) bool { return true }
