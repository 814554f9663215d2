package rlds

import "testing"

// TestRecordPool: sizes round up to eighths of a power of two; get hands
// out the smallest idle buffer that fits, up to half as large again as the
// size class, allocates
// up to 1 MiB itself and leaves larger ones to the reader; put keeps at
// most the limit, dropping the oldest.
func TestRecordPool(t *testing.T) {
	for n, want := range map[int]int{0: 64 << 10, 1: 64 << 10, 64 << 10: 64 << 10, 64<<10 + 1: 72 << 10, 1000000: 1 << 20, 1<<20 + 1: 1<<20 + 128<<10, 5 << 20: 5 << 20} {
		if got := roundSize(n); got != want {
			t.Errorf("roundSize(%d) = %d, want %d", n, got, want)
		}
	}
	p := newRecordPool(4 << 20)
	if b := p.get(100 << 10); cap(b) != 104<<10 || len(b) != 0 {
		t.Fatalf("new buffer: len %d cap %d, want 0, %d", len(b), cap(b), 104<<10)
	}
	if b := p.get(3 << 20); b != nil {
		t.Fatalf("a 3 MiB miss allocated %d bytes before the record's header was read", cap(b))
	}
	p.put(make([]byte, 10, 1<<20))
	p.put(make([]byte, 0, 896<<10))
	p.put(make([]byte, 0, 870<<10))
	if p.held != 1<<20+1766<<10 || len(p.free) != 3 {
		t.Fatalf("pool holds %d bytes in %d buffers", p.held, len(p.free))
	}
	if b := p.get(860 << 10); cap(b) != 870<<10 || len(b) != 0 {
		t.Fatalf("got cap %d, want the 870 KiB buffer (the smallest that fits)", cap(b))
	}
	if b := p.get(500 << 10); cap(b) != 512<<10 {
		t.Fatalf("got cap %d: a buffer over 1.5 times the size class was handed out", cap(b))
	}
	if p.Hits.Load() != 1 || p.Misses.Load() != 3 {
		t.Fatalf("%d hits, %d misses, want 1 and 3", p.Hits.Load(), p.Misses.Load())
	}
	p.put(make([]byte, 0, 3<<20)) // 1 MiB + 896 KiB + 3 MiB > 4 MiB: the oldest (1 MiB) goes
	if p.held != 896<<10+3<<20 || len(p.free) != 2 {
		t.Fatalf("pool holds %d bytes in %d buffers, want 3.875 MiB in 2", p.held, len(p.free))
	}
	p.put(make([]byte, 0, 5<<20)) // larger than the limit: not kept
	if p.held != 896<<10+3<<20 {
		t.Fatalf("pool holds %d bytes, want 3.875 MiB", p.held)
	}
}

// TestEpisodeHolds: the loader's hold and each Retain are given back by
// Release; the last one returns the record to the pool, after which Retain
// fails, and one Release too many panics.
func TestEpisodeHolds(t *testing.T) {
	buf := make([]byte, 0, 77<<10)
	pool := newRecordPool(1 << 20)
	e := &Episode{id: "d/train/0/0", rec: &record{buf: buf, pool: pool}}
	e.rec.refs.Store(1)
	r := e.Rename("other").(*Episode)
	if !r.Retain() {
		t.Fatal("Retain of a held episode failed")
	}
	e.Release()
	if len(pool.free) != 0 {
		t.Fatal("the record went back to the pool while held")
	}
	r.Release() // the last hold, through the renamed copy
	if len(pool.free) != 1 || cap(pool.free[0]) != cap(buf) {
		t.Fatal("the last Release did not return the record to the pool")
	}
	if e.Retain() {
		t.Fatal("Retain succeeded after the record went back to the pool")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("one Release too many did not panic")
		}
	}()
	e.Release()
}
