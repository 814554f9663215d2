package storage

import (
	"net/http"
	"testing"
	"time"
)

// TestParseRetryAfter: delay-seconds and HTTP dates (RFC 9110 §10.2.3),
// anything else, negative or past is no wait, and a huge value is capped.
func TestParseRetryAfter(t *testing.T) {
	future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name     string
		header   string
		min, max time.Duration
	}{
		{"absent", "", 0, 0},
		{"seconds", "3", 3 * time.Second, 3 * time.Second},
		{"spaces", " 7 ", 7 * time.Second, 7 * time.Second},
		{"zero", "0", 0, 0},
		{"negative", "-5", 0, 0},
		{"fraction", "1.5", 0, 0},
		{"text", "soon", 0, 0},
		{"huge", "99999999999999999", 24 * time.Hour, 24 * time.Hour},
		{"overflowing", "99999999999999999999", 0, 0},
		{"past date", "Wed, 21 Oct 2015 07:28:00 GMT", 0, 0},
		{"future date", future, 58 * time.Minute, time.Hour},
		{"far date", "Wed, 01 Oct 2100 00:00:00 GMT", 24 * time.Hour, 24 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseRetryAfter(tc.header); got < tc.min || got > tc.max {
				t.Errorf("ParseRetryAfter(%q) = %v, want within [%v, %v]", tc.header, got, tc.min, tc.max)
			}
		})
	}
}
