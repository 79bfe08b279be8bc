package engine

import (
	"testing"

	containertypes "github.com/moby/moby/api/types/container"
)

func TestMergeResources(t *testing.T) {
	pids := int64(50)
	r := containertypes.Resources{Memory: 64 << 20, MemorySwap: 128 << 20, CPUPeriod: 100000, CPUQuota: 50000, CpusetCpus: "0"}
	// Zero fields keep their value.
	mergeResources(&r, containertypes.Resources{CPUShares: 512, PidsLimit: &pids})
	if r.Memory != 64<<20 || r.MemorySwap != 128<<20 || r.CPUShares != 512 || r.CpusetCpus != "0" || r.PidsLimit == nil || *r.PidsLimit != 50 {
		t.Errorf("after a partial update: %+v", r)
	}
	// NanoCPUs replace a period and quota.
	mergeResources(&r, containertypes.Resources{NanoCPUs: 1e9, CpusetCpus: "1"})
	if r.NanoCPUs != 1e9 || r.CPUPeriod != 0 || r.CPUQuota != 0 || r.CpusetCpus != "1" {
		t.Errorf("after NanoCPUs: %+v", r)
	}
	if limitsGiven(containertypes.Resources{}) || !limitsGiven(containertypes.Resources{PidsLimit: &pids}) || !limitsGiven(containertypes.Resources{CpusetMems: "0"}) {
		t.Error("limitsGiven")
	}
}
