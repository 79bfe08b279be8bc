package apiserver

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The media types of Docker's JSON streams (API 1.52 and later): a client
// asks for one in Accept.
const (
	mediaJSONLines    = "application/jsonl"
	mediaNDJSON       = "application/x-ndjson"
	mediaJSONSequence = "application/json-seq" // RFC 7464: each record after an RS byte
)

var jsonStreamTypes = []string{mediaJSONLines, mediaNDJSON, mediaJSONSequence}

// acceptedExactly returns the offer that the request's Accept names
// explicitly with the highest quality (ties go to the earlier offer), or ""
// when it names none: wildcards do not count, and neither does q=0, as
// Docker negotiates its streams.
func acceptedExactly(h http.Header, offers []string) string {
	best, bestQ := "", -1.0
	for _, accept := range h.Values("Accept") {
		for _, spec := range strings.Split(accept, ",") {
			value, q := parseAcceptSpec(spec)
			if q <= 0 {
				continue
			}
			for _, offer := range offers {
				if value == offer && (q > bestQ || (q == bestQ && slices.Index(offers, offer) < slices.Index(offers, best))) {
					best, bestQ = offer, q
				}
			}
		}
	}
	return best
}

// parseAcceptSpec splits one element of Accept into its media type and
// its quality (1 when not given, 0 when malformed).
func parseAcceptSpec(spec string) (string, float64) {
	parts := strings.Split(spec, ";")
	value := strings.ToLower(strings.TrimSpace(parts[0]))
	q := 1.0
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || strings.TrimSpace(k) != "q" {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 0 || f > 1 {
			return value, 0
		}
		q = f
	}
	return value, q
}
