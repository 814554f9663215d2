package diskcache

import (
	"bytes"
	"context"
	"runtime"
	"testing"
)

// TestReadAtKeepNoneAllocs: a KeepNone read of a small range (an RLDS
// header hop) goes straight into the caller's bytes: a few small
// allocations per read, no buffer of its own. Its caller checks the bytes
// (CallerChecks), so it is fetched once.
func TestReadAtKeepNoneAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	b, src := readerCache(t, 64<<20)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<12)
	src.put("f", data)
	o := object(t, b, "f")
	ctx := context.Background()
	p := make([]byte, 12)
	read := func() {
		if _, err := b.ReadAt(ctx, o, p, 1000, ReadOptions{Keep: KeepNone, CallerChecks: true}); err != nil {
			t.Fatal(err)
		}
	}
	read()
	const runs = 100
	allocs := testing.AllocsPerRun(runs, read)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		read()
	}
	runtime.ReadMemStats(&after)
	perRead := (after.TotalAlloc - before.TotalAlloc) / runs
	t.Logf("a KeepNone read of %d bytes: %.0f allocations, %d bytes", len(p), allocs, perRead)
	if allocs > 20 || perRead > 2<<10 {
		t.Errorf("a KeepNone read of %d bytes: %.0f allocations, %d bytes; want at most 20 and 2 KiB", len(p), allocs, perRead)
	}
	if !bytes.Equal(p, data[1000:1012]) {
		t.Errorf("read %q, want %q", p, data[1000:1012])
	}
}
