// Package episodes keeps loaded episodes of any format in RAM, within a
// byte budget, and makes concurrent readers of one episode share one load.
// It wraps an episode.Dataset: a format's dataset goes in, a caching one
// comes out, so the assembler and the composition root read every format
// the same way.
//
// The cache is keyed by where the bytes live (the dataset's location), not
// by the dataset's name in the mix: two mix entries over one source (two
// cameras of one dataset) share each parsed episode, and each sees it under
// its own name.
//
// episodes imports only the neutral model (package episode); it must not
// import a format or storage.
package episodes

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/ristretto/v2"
	"golang.org/x/sync/singleflight"

	"github.com/oxefs/oxefs/episode"
)

// Stats counts the cache's traffic. It is safe for concurrent use.
type Stats struct {
	Hits, Misses atomic.Int64
}

// Cache holds parsed episodes up to a byte budget (each episode's Size).
//
// An episode whose memory its format reuses (episode.Recycled) is held by
// the cache while it is stored, and by each caller of Lend until it gives
// it back; Episode's callers hold it for good. Its memory is reused only
// after the last hold is released.
type Cache struct {
	ram *ristretto.Cache[string, *stored]

	// ctx is the daemon's lifetime: a load several readers wait for runs
	// under it, so one reader giving up does not cancel it for the others.
	ctx     context.Context
	cancel  context.CancelFunc
	loads   singleflight.Group
	running sync.WaitGroup // loads in flight, waited for by Close

	mu     sync.Mutex
	closed bool // guarded by mu: no load may begin once set

	Stats Stats
}

// New makes a cache of budget bytes.
func New(budget int64) (*Cache, error) {
	if budget <= 0 {
		return nil, fmt.Errorf("episode cache: RAM budget must be positive, got %d", budget)
	}
	// NumCounters ≈ 10× the items that fit, assuming episodes of ~256 KiB.
	counters := max(budget/(256<<10)*10, 1e4)
	ram, err := ristretto.NewCache(&ristretto.Config[string, *stored]{
		NumCounters: counters,
		MaxCost:     budget,
		BufferItems: 64,
		OnExit:      (*stored).exit,
	})
	if err != nil {
		return nil, fmt.Errorf("episode cache: %w", err)
	}
	c := &Cache{ram: ram}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Close stops the loads in flight, waits for them, and empties the cache.
// Episode calls after Close fail with context.Canceled.
func (c *Cache) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.running.Wait()
	c.ram.Close()
}

// begin registers a load; it reports false once the cache is closing.
func (c *Cache) begin() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.running.Add(1)
	return true
}

// stored is an episode in the cache, with the cache's hold on it when it
// is an episode.Recycled.
type stored struct {
	ep   episode.Episode
	hold episode.Recycled // nil: nothing to give back
	out  atomic.Bool      // the hold was given back (exit runs once per value)
}

// exit gives back the cache's hold when the episode leaves the cache
// (evicted, rejected, replaced or cleared).
func (s *stored) exit() {
	if s != nil && s.hold != nil && s.out.CompareAndSwap(false, true) {
		s.hold.Release()
	}
}

// Dataset is a format's dataset whose episodes go through a Cache.
type Dataset struct {
	episode.Dataset
	cache *Cache
	name  string // the dataset's name in ids and messages
	where string // the source's location, the cache key's prefix
}

// Wrap returns ds with its episodes cached in c.
func (c *Cache) Wrap(ds episode.Dataset) *Dataset {
	in := ds.Info()
	return &Dataset{Dataset: ds, cache: c, name: in.Name, where: in.Location}
}

// Episode returns one episode, from the cache when it is there. The load
// runs under the cache's lifetime; ctx decides only how long this caller
// waits. Loads are keyed by the dataset as well as the source, so that a
// load's errors name the dataset that asked. The caller keeps the episode
// for as long as it likes (its memory is never reused); see Lend.
func (d *Dataset) Episode(ctx context.Context, key episode.Key) (episode.Episode, error) {
	ep, _, err := d.Lend(ctx, key)
	return ep, err
}

var _ episode.Lender = (*Dataset)(nil)

// Lend is Episode for a caller that gives the episode back: when hold is
// not nil, the caller calls hold.Release() once it is done with the
// episode and with everything it took from it, and the episode's memory
// may then be reused for another load.
func (d *Dataset) Lend(ctx context.Context, key episode.Key) (ep episode.Episode, hold episode.Recycled, err error) {
	c := d.cache
	k := d.where + "\x00" + key.Split + "/" + strconv.Itoa(key.Shard) + "/" + strconv.Itoa(key.Record)
	if !c.begin() {
		return nil, nil, context.Canceled
	}
	s, ok := c.ram.Get(k)
	c.running.Done()
	if ok && (s.hold == nil || s.hold.Retain()) {
		// A stored episode whose memory was already given back (evicted
		// between Get and Retain) is a miss.
		c.Stats.Hits.Add(1)
		return d.own(s.ep), s.hold, nil
	}
	c.Stats.Misses.Add(1)
	ch := c.loads.DoChan(d.name+"\x00"+k, func() (any, error) {
		if !c.begin() {
			return nil, context.Canceled
		}
		defer c.running.Done()
		ep, err := d.Dataset.Episode(c.ctx, key)
		if err != nil {
			return nil, err
		}
		s := &stored{ep: ep}
		if r, ok := ep.(episode.Recycled); ok && r.Retain() { // the cache's hold; the load's goes to the caller
			s.hold = r
		}
		if !c.ram.Set(k, s, int64(ep.Size())) {
			s.exit() // dropped: the cache holds nothing
		}
		return s, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, nil, r.Err
		}
		s := r.Val.(*stored)
		if r.Shared || s.hold == nil {
			// Callers that shared one load cannot tell which of them
			// holds the load's hold: none gives it back, and the memory
			// goes to the garbage collector when the cache lets go.
			return d.own(s.ep), nil, nil
		}
		return d.own(s.ep), s.hold, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err() // the load's hold is never given back
	}
}

// own returns ep under d's name: ep itself when d loaded it, else the same
// parsed episode renamed.
func (d *Dataset) own(ep episode.Episode) episode.Episode {
	if ep.Dataset() == d.name {
		return ep
	}
	return ep.Rename(d.name)
}

// Wait blocks until every episode stored so far can be found: the cache
// admits new episodes asynchronously.
func (c *Cache) Wait() { c.ram.Wait() }
