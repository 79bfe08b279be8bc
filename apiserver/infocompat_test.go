package apiserver

import (
	"encoding/json"
	"testing"

	"github.com/moby/moby/api/types/system"
)

func TestInfoFor(t *testing.T) {
	info := system.Info{
		ID:                "x",
		ContainerdCommit:  system.Commit{ID: "c1"},
		FirewallBackend:   &system.FirewallInfo{Driver: "none"},
		DiscoveredDevices: []system.DeviceInfo{{Source: "cdi", ID: "d"}},
		NRI:               &system.NRIInfo{},
	}
	fields := func(version string) map[string]any {
		t.Helper()
		v, err := infoFor(info, version)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		var m map[string]any
		json.Unmarshal(b, &m)
		return m
	}
	now := fields("1.56")
	for _, k := range []string{"FirewallBackend", "DiscoveredDevices", "NRI"} {
		if _, ok := now[k]; !ok {
			t.Errorf("1.56 lacks %s", k)
		}
	}
	if _, ok := now["BridgeNfIptables"]; ok {
		t.Error("1.56 has BridgeNfIptables")
	}
	old := fields("1.49")
	if old["BridgeNfIp6tables"] != false || old["BridgeNfIptables"] != false {
		t.Errorf("1.49: BridgeNf* %v %v", old["BridgeNfIptables"], old["BridgeNfIp6tables"])
	}
	if _, ok := old["DiscoveredDevices"]; ok {
		t.Error("1.49 has DiscoveredDevices")
	}
	if _, ok := old["NRI"]; ok {
		t.Error("1.49 has NRI")
	}
	older := fields("1.48")
	if c, _ := older["ContainerdCommit"].(map[string]any); c["Expected"] != "c1" || c["ID"] != "c1" {
		t.Errorf("1.48 ContainerdCommit %v", older["ContainerdCommit"])
	}
	if _, ok := older["FirewallBackend"]; ok {
		t.Error("1.48 has FirewallBackend")
	}
	if _, ok := fields("1.46")["RegistryConfig"].(map[string]any)["AllowNondistributableArtifactsCIDRs"]; !ok {
		t.Error("1.46 lacks RegistryConfig.AllowNondistributableArtifactsCIDRs")
	}
}
