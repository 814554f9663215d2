package loader

import (
	"context"
	"log/slog"
	"sync"

	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/storage"
)

// prefetcher fetches the shards the next batches need into the disk cache,
// in plan order, while builds go on. Only remote datasets need it: it is nil
// when the mix has none.
type prefetcher struct {
	mix *Mix
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{}

	mu   sync.Mutex
	plan *plan.Plan // guarded by mu: the view read last
	at   int64      // guarded by mu: the batch to prefetch from
	last int64      // guarded by mu: where the last prefetch started
}

// prefetchAhead is how many batches ahead the prefetcher looks.
const prefetchAhead = 64

func newPrefetcher(m *Mix, log *slog.Logger) *prefetcher {
	remote := false
	for _, d := range m.Datasets {
		if !storage.IsFiler(d.Data.Backend()) && format.FetcherOf(d.Data) != nil {
			remote = true
		}
	}
	if !remote {
		return nil
	}
	pf := &prefetcher{mix: m, log: log, wake: make(chan struct{}, 1), done: make(chan struct{}), last: -prefetchAhead}
	pf.ctx, pf.cancel = context.WithCancel(context.Background())
	go pf.run()
	return pf
}

// advance says that batch n of plan is being built.
func (pf *prefetcher) advance(pl *plan.Plan, n int64) {
	if pf == nil {
		return
	}
	pf.mu.Lock()
	pf.plan, pf.at = pl, n
	pf.mu.Unlock()
	select {
	case pf.wake <- struct{}{}:
	default:
	}
}

func (pf *prefetcher) run() {
	defer close(pf.done)
	for {
		select {
		case <-pf.ctx.Done():
			return
		case <-pf.wake:
		}
		pf.mu.Lock()
		pl, at, last := pf.plan, pf.at, pf.last
		if at >= last && at < last+prefetchAhead/2 {
			pf.mu.Unlock()
			continue // the last prefetch still covers this stretch
		}
		pf.last = at
		pf.mu.Unlock()
		refs := pf.mix.ShardRefs(pl.ShardsAhead(at, prefetchAhead, nil))
		if _, err := format.Prefetch(pf.ctx, refs, 4, nil); err != nil && pf.ctx.Err() == nil {
			pf.log.Warn("prefetch", "err", err)
		}
	}
}

func (pf *prefetcher) close() {
	pf.cancel()
	<-pf.done
}
