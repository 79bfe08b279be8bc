package apiserver

import (
	"encoding/json"
	"testing"

	"github.com/moby/moby/api/types/jsonstream"
)

func TestProgressText(t *testing.T) {
	tests := []struct {
		name string
		p    *jsonstream.Progress
		want string
	}{
		// Lines as Docker 28's daemon sent them for hello-world and busybox.
		{"docker hello-world start", &jsonstream.Progress{Current: 719, Total: 2457},
			"[==============>                                    ]     719B/2.457kB"},
		{"docker complete", &jsonstream.Progress{Current: 2457, Total: 2457},
			"[==================================================>]  2.457kB/2.457kB"},
		{"docker busybox start", &jsonstream.Progress{Current: 21970, Total: 2152262},
			"[>                                                  ]  21.97kB/2.152MB"},
		{"megabytes", &jsonstream.Progress{Current: 1_200_000, Total: 3_400_000},
			"[=================>                                 ]    1.2MB/3.4MB"},
		{"nothing yet", &jsonstream.Progress{}, ""},
		{"nil", nil, ""},
		{"unknown total", &jsonstream.Progress{Current: 1024}, " 1.024kB"},
		{"unknown total with units", &jsonstream.Progress{Current: 3, Units: "layers"}, "3 layers"},
		{"current beyond total", &jsonstream.Progress{Current: 3000, Total: 2000},
			"[==================================================>]      3kB"},
		{"units", &jsonstream.Progress{Current: 1, Total: 3, Units: "layers"},
			"[================>                                  ] 1/3 layers"},
		{"hidden counts", &jsonstream.Progress{Current: 50, Total: 100, HideCounts: true},
			"[=========================>                         ] "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ProgressText(tt.p); got != tt.want {
				t.Errorf("ProgressText = %q\n                   want %q", got, tt.want)
			}
		})
	}
}

func TestStreamMessageJSON(t *testing.T) {
	const testDigest = "sha256:4bcff63911fcb4448bd4fdacec207030997caf25e9bea4045fa6c8c44de311d1"
	tests := []struct {
		name string
		m    jsonstream.Message
		want string
	}{
		{"download", jsonstream.Message{ID: "719385e32844", Status: "Downloading", Progress: &jsonstream.Progress{Current: 719, Total: 2457}},
			`{"status":"Downloading","progressDetail":{"current":719,"total":2457},"id":"719385e32844","progress":"[==============\u003e                                    ]     719B/2.457kB"}`},
		{"layer status", jsonstream.Message{ID: "719385e32844", Status: "Pull complete", Progress: &jsonstream.Progress{}},
			`{"status":"Pull complete","progressDetail":{},"id":"719385e32844"}`},
		{"plain status", jsonstream.Message{Status: "Digest: " + testDigest},
			`{"status":"Digest: ` + testDigest + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(NewStreamMessage(tt.m))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}
