package storage

import (
	"testing"
	"time"
)

// FuzzExtractLayer feeds arbitrary archives to extractLayer and to the
// library's extraction: both must accept or refuse each one, make the
// same tree and metadata, and never write beside the layer directory.
func FuzzExtractLayer(f *testing.F) {
	for _, tc := range extractCases {
		f.Add(makeTar(f, tc.entries, tc.trailer))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		since := time.Now().Add(-time.Second)
		extractBoth(t, data).compare(t, since)
	})
}
