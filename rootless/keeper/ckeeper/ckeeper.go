// Package ckeeper is hutch-keeper's source, C linked statically by the
// Makefile (keeper.c, port.c and util.c, built with HUTCH_KEEPER_MAIN;
// msg.c), and the Go that tests it: its decoders, reached through cgo,
// are compared with Go's encoding/json and fuzzed, and the program
// itself is run against the keeper protocol's client (package
// rootless/keeper) and rootlesskit's port driver. Only tests import this
// package.
//
// hutch-keeper is the live-restore keeper's namespace child once hutch-ns
// has set the namespaces up: a Go process that only waits maps several
// megabytes for the daemon's whole life, this one a few hundred
// kilobytes.
package ckeeper

/*
#include <stdlib.h>
#include "msg.h"
*/
import "C"

import (
	"errors"
	"unsafe"
)

// KeeperRequest is hk_keeper_req.
type KeeperRequest struct {
	V  int
	Op string
}

// PortRequest is hk_port_req, rootlesskit's msg.Request.
type PortRequest struct {
	Type, Proto, IP         string
	Port                    int
	ParentIP, HostGatewayIP string
	SourceIP                string
	SourcePort              int
}

// ParseKeeperRequest decodes a keeper request as hutch-keeper does.
func ParseKeeperRequest(b []byte) (KeeperRequest, error) {
	var r C.struct_hk_keeper_req
	var cerr *C.char
	p := C.CBytes(b)
	defer C.free(p)
	if C.hk_parse_keeper_req((*C.char)(p), C.size_t(len(b)), &r, &cerr) != 0 {
		return KeeperRequest{}, errors.New(C.GoString(cerr))
	}
	return KeeperRequest{V: int(r.v), Op: C.GoString(&r.op[0])}, nil
}

// ParsePortRequest decodes a port driver request's body as hutch-keeper
// does.
func ParsePortRequest(b []byte) (PortRequest, error) {
	var r C.struct_hk_port_req
	var cerr *C.char
	p := C.CBytes(b)
	defer C.free(p)
	if C.hk_parse_port_req((*C.char)(p), C.size_t(len(b)), &r, &cerr) != 0 {
		return PortRequest{}, errors.New(C.GoString(cerr))
	}
	return PortRequest{
		Type: C.GoString(&r._type[0]), Proto: C.GoString(&r.proto[0]), IP: C.GoString(&r.ip[0]),
		Port: int(r.port), ParentIP: C.GoString(&r.parent_ip[0]), HostGatewayIP: C.GoString(&r.host_gateway_ip[0]),
		SourceIP: C.GoString(&r.source_ip[0]), SourcePort: int(r.source_port),
	}, nil
}

// JSONString encodes s as hutch-keeper does, in a buffer of size bytes;
// false when it does not fit.
func JSONString(s string, size int) (string, bool) {
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	buf := (*C.char)(C.malloc(C.size_t(size)))
	defer C.free(unsafe.Pointer(buf))
	n := C.hk_json_string(buf, C.size_t(size), cs)
	if n < 0 {
		return "", false
	}
	return C.GoStringN(buf, C.int(n)), true
}
