package apiserver

import (
	"encoding/json"

	"github.com/moby/moby/api/types/system"
)

// infoFor shapes /info for the API version asked, as Docker does: fields
// newer than the version are left out, and fields the version still had
// (since removed) are put back with the values Docker gives them.
func infoFor(info system.Info, version string) (any, error) {
	extra := map[string]map[string]any{} // top-level key → fields to add ("" adds the key itself)
	if versionLess(version, "1.44") {
		for k, rt := range info.Runtimes {
			info.Runtimes[k] = system.RuntimeWithStatus{Runtime: rt.Runtime}
		}
	}
	if versionLess(version, "1.46") {
		info.Containerd = nil
	}
	if versionLess(version, "1.47") {
		extra["RegistryConfig"] = map[string]any{
			"AllowNondistributableArtifactsCIDRs":     nil,
			"AllowNondistributableArtifactsHostnames": nil,
		}
	}
	if versionLess(version, "1.49") {
		info.FirewallBackend = nil
		extra["ContainerdCommit"] = map[string]any{"Expected": info.ContainerdCommit.ID}
		extra["RuncCommit"] = map[string]any{"Expected": info.RuncCommit.ID}
		extra["InitCommit"] = map[string]any{"Expected": info.InitCommit.ID}
	}
	if versionLess(version, "1.50") {
		info.DiscoveredDevices = nil
		extra[""] = map[string]any{"BridgeNfIptables": false, "BridgeNfIp6tables": false}
	}
	if versionLess(version, "1.53") {
		info.NRI = nil
	}
	if len(extra) == 0 {
		return info, nil
	}
	b, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	for key, fields := range extra {
		if key == "" {
			for k, v := range fields {
				out[k] = v
			}
			continue
		}
		obj, _ := out[key].(map[string]any)
		if obj == nil {
			obj = map[string]any{}
		}
		for k, v := range fields {
			obj[k] = v
		}
		out[key] = obj
	}
	return out, nil
}
