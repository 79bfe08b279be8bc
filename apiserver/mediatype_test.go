package apiserver

import (
	"net/http"
	"testing"
)

func TestAcceptedExactly(t *testing.T) {
	for _, tt := range []struct {
		accept []string
		want   string
	}{
		{nil, ""},
		{[]string{"*/*"}, ""},
		{[]string{"application/*"}, ""},
		{[]string{"application/json-seq"}, mediaJSONSequence},
		{[]string{"application/jsonl, application/json-seq"}, mediaJSONLines},
		{[]string{"application/jsonl;q=0.5, application/json-seq"}, mediaJSONSequence},
		{[]string{"application/json-seq;q=0", "application/x-ndjson"}, mediaNDJSON},
		{[]string{"text/plain, Application/X-NDJSON ; q=0.9"}, mediaNDJSON},
		{[]string{"application/json-seq;q=2"}, ""},
		{[]string{"application/json"}, ""},
	} {
		h := http.Header{}
		for _, a := range tt.accept {
			h.Add("Accept", a)
		}
		if got := acceptedExactly(h, jsonStreamTypes); got != tt.want {
			t.Errorf("Accept %q: %q, want %q", tt.accept, got, tt.want)
		}
	}
}
