package rlds

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// record is the buffer an episode's tf.train.Example was read into, which
// the parsed Example (zero-copy) and every Bytes slice point into. It goes
// back to the pool once every hold on it is released (see
// episode.Recycled): reusing it saves a fresh allocation per load, which
// the runtime zeroes and the kernel faults in page by page.
type record struct {
	buf  []byte
	pool *recordPool  // where buf goes back
	refs atomic.Int32 // holds; 0: given back to the pool for good
}

// Retain takes one more hold on the episode's record; false means it has
// been given back already.
func (e *Episode) Retain() bool {
	r := e.rec
	if r == nil {
		return true
	}
	for {
		n := r.refs.Load()
		if n <= 0 {
			return false
		}
		if r.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release gives back one hold; the last gives the record to the pool.
func (e *Episode) Release() {
	r := e.rec
	if r == nil {
		return
	}
	switch n := r.refs.Add(-1); {
	case n == 0:
		r.pool.put(r.buf)
	case n < 0:
		panic("rlds: episode " + e.id + " released more often than it was held")
	}
}

// records is the pool of record buffers shared by every dataset.
var records = newRecordPool(recordPoolBytes)

// recordPoolBytes bounds the bytes of idle buffers the pool keeps, out of
// the memory budget's headroom. Without the pool they would be garbage
// waiting for the collector.
const recordPoolBytes = 64 << 20

// recordPool keeps idle record buffers, at most limit bytes of them, and
// hands out the smallest that fits, if it is at most half as large again
// as the record's size class: new buffers are rounded up to one of eight
// steps per power of two, and a record may take a buffer up to about 1.6
// times its size (the episode's cost in the RAM cache is the buffer's
// capacity). On the 29-dataset synth mix 3 loads in 4 reuse a buffer.
type recordPool struct {
	limit int

	mu   sync.Mutex
	free [][]byte // guarded by mu: idle buffers, oldest first
	held int      // guarded by mu: their bytes

	// Hits and Misses count get calls served from the pool or allocated.
	Hits, Misses atomic.Int64
}

func newRecordPool(limit int) *recordPool { return &recordPool{limit: limit} }

// roundSize rounds n up to a pool size class: a multiple of 1/8 of the
// power of two below it, at least 64 KiB.
func roundSize(n int) int {
	if n <= 64<<10 {
		return 64 << 10
	}
	step := 1 << (bits.Len(uint(n-1)) - 4) // an eighth of the power of two below n
	return (n + step - 1) / step * step
}

// get returns an empty buffer with room for n bytes: the smallest idle one
// that holds n and is at most n/2 larger than n's size class, else a new
// one of n's size class when that is at most 1 MiB, else nil (the reader
// allocates, once the record's header has confirmed its length: a corrupt
// span cannot make it allocate more than 1 MiB).
func (p *recordPool) get(n int) []byte {
	size := roundSize(n)
	p.mu.Lock()
	best := -1
	for i, b := range p.free {
		if c := cap(b); c >= n && c <= size+n/2 && (best < 0 || c < cap(p.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := p.free[best]
		p.free = append(p.free[:best], p.free[best+1:]...)
		p.held -= cap(b)
		p.mu.Unlock()
		p.Hits.Add(1)
		return b[:0]
	}
	p.mu.Unlock()
	p.Misses.Add(1)
	if size > 1<<20 {
		return nil
	}
	return make([]byte, 0, size)
}

// put keeps b for a later get, dropping the oldest idle buffers to stay
// within the limit (b itself when it alone is larger).
func (p *recordPool) put(b []byte) {
	c := cap(b)
	if c == 0 || c > p.limit {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.held+c > p.limit && len(p.free) > 0 {
		p.held -= cap(p.free[0])
		p.free[0] = nil
		p.free = p.free[1:]
	}
	p.free = append(p.free, b[:0])
	p.held += c
}
