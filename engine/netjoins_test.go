package engine

import (
	"slices"
	"testing"
)

// The containers that lose their network with an owner's namespace: its
// joiners, and theirs (--network container:<a joiner> is the owner's
// namespace too), each once.
func TestNetnsJoinsClosure(t *testing.T) {
	var j netnsJoins
	j.add("web", "side")
	j.add("web", "proxy")
	j.add("side", "deep")
	j.add("alone", "alone-side")
	if got, want := j.closure([]string{"web"}), []string{"web", "proxy", "side", "deep"}; !slices.Equal(got, want) {
		t.Errorf("closure(web) = %v, want %v", got, want)
	}
	if got, want := j.closure([]string{"side", "web"}), []string{"side", "web", "deep", "proxy"}; !slices.Equal(got, want) {
		t.Errorf("closure(side, web) = %v, want %v", got, want)
	}
	if got := j.closure(nil); len(got) != 0 {
		t.Errorf("closure() = %v", got)
	}
	if got := j.joiners("web"); !slices.Equal(got, []string{"proxy", "side"}) {
		t.Errorf("joiners(web) = %v", got)
	}
}
