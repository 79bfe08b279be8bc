package network

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	enet "github.com/hutch-engine/hutch/engine/network"
)

// tableName is hutch's nftables table in the detached namespace.
const tableName = "hutch"

// nat is hutch's nftables table: masquerading of bridge subnets out
// through the uplink, and a forward chain that keeps networks apart. Every
// rule carries its network's ID as user data, so that it can be found
// again when the network goes.
type nat struct {
	mu     sync.Mutex
	conn   *nftables.Conn
	uplink string
	table  *nftables.Table
	post   *nftables.Chain
	fwd    *nftables.Chain
}

// newNAT creates the table and its chains, or keeps them when an earlier
// engine made them in the same namespace (live restore): the rules of
// the running containers' networks then stay in force throughout, and a
// connection a container opens while the next engine starts is
// masqueraded as ever (one that missed its rule would keep its
// unmasqueraded conntrack entry, and hang). add replaces a network's
// rules when the engine sets it up again; a network's removal removes
// them. It must run on the namespace thread: the lasting netlink socket
// is made in the caller's namespace.
func newNAT(uplink string) (*nat, error) {
	conn, err := nftables.New(nftables.AsLasting())
	if err != nil {
		return nil, err
	}
	n := &nat{conn: conn, uplink: uplink, table: &nftables.Table{Family: nftables.TableFamilyIPv4, Name: tableName}}
	accept := nftables.ChainPolicyAccept
	conn.AddTable(n.table)
	n.post = conn.AddChain(&nftables.Chain{Name: "postrouting", Table: n.table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	n.fwd = conn.AddChain(&nftables.Chain{Name: "forward", Table: n.table, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	if err := conn.Flush(); err != nil {
		conn.CloseLasting()
		return nil, err
	}
	return n, nil
}

// add installs a network's rules (replacing any it had).
func (t *nat) add(n *enet.Network) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.removeLocked(n.ID); err != nil {
		return err
	}
	for _, r := range rulesFor(n, t.uplink) {
		r.Table = t.table
		r.Chain = t.fwd
		if r.chain == "postrouting" {
			r.Chain = t.post
		}
		t.conn.AddRule(r.Rule)
	}
	return t.conn.Flush()
}

// remove deletes a network's rules.
func (t *nat) remove(id string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.removeLocked(id)
}

func (t *nat) removeLocked(id string) error {
	var errs []error
	for _, c := range []*nftables.Chain{t.post, t.fwd} {
		rules, err := t.conn.GetRules(t.table, c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range rules {
			if bytes.Equal(r.UserData, []byte(id)) {
				errs = append(errs, t.conn.DelRule(r))
			}
		}
	}
	errs = append(errs, t.conn.Flush())
	return errors.Join(errs...)
}

// rule is an nftables rule and the chain it goes in.
type rule struct {
	*nftables.Rule
	chain string // "postrouting" or "forward"
}

// rulesFor are a network's rules:
//
//	postrouting: ip saddr <subnet> oifname != <bridge> masquerade   (not internal, IPv4)
//	forward:     iifname <bridge> oifname <bridge> accept
//	             iifname <bridge> oifname <uplink> accept            (not internal)
//	             iifname <bridge> drop                               (other networks)
//	             oifname <bridge> drop                               (internal)
//
// Traffic from the uplink to a bridge is only ever replies: nothing routes
// into the detached namespace but slirp4netns's answers. The table is
// IPv4's: IPv6 is not forwarded in the detached namespace at all (the
// uplink has no IPv6), so the IPv6 traffic of a network stays on its
// bridge, between its containers and its gateway.
func rulesFor(n *enet.Network, uplink string) []rule {
	id := []byte(n.ID)
	br := ifname(n.Bridge)
	var out []rule
	if !n.Internal && n.IPv4() {
		s := n.Subnet.Masked()
		addr := s.Addr().As4()
		mask := maskBytes(s.Bits())
		out = append(out, rule{chain: "postrouting", Rule: &nftables.Rule{UserData: id, Exprs: []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: []byte{0, 0, 0, 0}},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: addr[:]},
			&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: br},
			&expr.Masq{},
		}}})
	}
	verdict := func(k expr.VerdictKind, match ...expr.Any) rule {
		return rule{chain: "forward", Rule: &nftables.Rule{UserData: id, Exprs: append(match, &expr.Verdict{Kind: k})}}
	}
	in := []expr.Any{&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: br}}
	outIs := func(name []byte) []expr.Any {
		return []expr.Any{&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name}}
	}
	out = append(out, verdict(expr.VerdictAccept, append(clone(in), outIs(br)...)...))
	if !n.Internal {
		out = append(out, verdict(expr.VerdictAccept, append(clone(in), outIs(ifname(uplink))...)...))
	}
	out = append(out, verdict(expr.VerdictDrop, clone(in)...))
	if n.Internal {
		out = append(out, verdict(expr.VerdictDrop, outIs(br)...))
	}
	return out
}

func clone(e []expr.Any) []expr.Any { return append([]expr.Any(nil), e...) }

// ifname is an interface name as nftables compares it: IFNAMSIZ bytes,
// NUL-padded.
func ifname(name string) []byte {
	b := make([]byte, 16)
	copy(b, name)
	return b
}

func maskBytes(bits int) []byte {
	if bits < 0 || bits > 32 {
		panic(fmt.Sprintf("mask of %d bits", bits))
	}
	v := ^uint32(0) << (32 - bits)
	if bits == 0 {
		v = 0
	}
	return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
}
