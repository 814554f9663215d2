package testkit

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

// MDATPayload returns where the payload of an MP4 file's top-level mdat
// box starts: past the sample tables (moov) and the framing that the
// LeRobot parser checks, the bytes only the decoder sees. The test fails
// when the file has none.
func MDATPayload(t testing.TB, b []byte) int64 {
	t.Helper()
	for off := 0; off+8 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[off:]))
		if string(b[off+4:off+8]) == "mdat" {
			return int64(off + 8)
		}
		if n < 8 {
			break
		}
		off += n
	}
	t.Fatal("no mdat box")
	return 0
}

// LeRobotSampleFlips is a RequestFaultProxy plan, for a LeRobot dataset
// whose files (named relative to its root) are files, that flips a byte
// in the middle of the first response of each ranged read of video sample
// data (a range within an MP4's mdat payload) and, in the first response
// of each ranged read from 0 of a data parquet file (its first block), a
// value of its first column, while on is set: damage no parser sees.
func LeRobotSampleFlips(t testing.TB, files map[string][]byte, on *atomic.Bool) func(r SeenRequest, nth int) Fault {
	payload := map[string]int64{}
	for name, b := range files {
		if strings.HasSuffix(name, ".mp4") {
			payload[name] = MDATPayload(t, b)
		}
	}
	return func(r SeenRequest, nth int) Fault {
		if !on.Load() || nth != 0 || r.Method != "GET" || r.Range == "" || strings.HasPrefix(r.Path, "/storage/v1/") {
			return Pass()
		}
		var from, to int64
		if _, err := fmt.Sscanf(r.Range, "bytes=%d-%d", &from, &to); err != nil {
			return Pass()
		}
		for name := range files {
			if !strings.HasSuffix(r.Path, "/"+name) {
				continue
			}
			switch {
			case strings.HasSuffix(name, ".mp4") && from >= payload[name]:
				return FlipAt((to - from) / 2)
			case strings.HasPrefix(name, "data/") && from == 0:
				// A float of the first column's first page (action in
				// the fixtures), a literal in its snappy stream: it
				// decodes, to another value.
				return FlipAt(40)
			}
		}
		return Pass()
	}
}
