package rootless

import (
	"encoding/json"
	"testing"
)

func TestInheritedHost(t *testing.T) {
	want := Handover{
		Parent:   ParentOptions{StateDir: "/run/user/1000/hutch/rootlesskit", IDMap: IDMapSingle, Network: true, Engine: "/usr/bin/hutch"},
		LockFD:   7,
		PidFile:  "/run/user/1000/hutch/hutch.pid",
		Socket:   "/run/user/1000/hutch.sock",
		LogLevel: "debug",
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		env     string
		wantErr bool
	}{
		{"handed over", string(b), false},
		{"started by hand", "", true},
		{"garbled", "{", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envHost, tt.env)
			got, err := inheritedHost()
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}
