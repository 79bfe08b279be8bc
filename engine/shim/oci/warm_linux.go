package oci

import (
	"encoding/json"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// warm readies a spare hutch-runtime for its request while it waits for
// one. encoding/json works out how to encode and decode a struct type the
// first time a process meets it, and a create meets three large type
// graphs: the OCI spec it decodes, libcontainer's config it sends to the
// init, and the state it saves. Worked out on the request's path that was
// 1.3-2.5 ms of a lone container's start; a spare does it before the
// request comes, off the path. A runtime whose request is already there
// (no spare was ready) goes straight to it.
func warm(fd int) {
	pending := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(pending, 0); err != nil || n > 0 {
		return
	}
	warmCodecs()
}

// warmCodecs builds the encoders for every type reachable from the spec,
// libcontainer's config and its state; the decoders share their field
// tables.
func warmCodecs() {
	_, _ = json.Marshal(&specs.Spec{})
	_, _ = json.Marshal(&bundleSpec{})
	_, _ = json.Marshal(&configs.Config{})
	_, _ = json.Marshal(&libcontainer.State{})
}
