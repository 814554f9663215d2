package diskcache

import (
	"fmt"
	"sync"
	"time"
)

// failMemo remembers the objects whose fetch gave up (storage.ErrUnavailable), so
// that the reads that follow within window fail at once instead of each
// waiting out the retry budget again: the episodes of one dead shard, the
// samples of one batch, the batches read ahead. After window the next read
// asks the source again, so a source that comes back is noticed within
// window. It is safe for concurrent use.
type failMemo struct {
	// constants
	window time.Duration

	mu     sync.Mutex
	failed map[string]memoFailure // guarded by mu: by object key
}

type memoFailure struct {
	err error // matches storage.ErrUnavailable
	at  time.Time
}

func newFailMemo(window time.Duration) *failMemo {
	return &failMemo{window: window, failed: make(map[string]memoFailure)}
}

// check returns the remembered failure of key, wrapped to say so, or nil.
func (m *failMemo) check(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.failed[key]
	if !ok {
		return nil
	}
	ago := time.Since(f.at)
	if ago >= m.window {
		delete(m.failed, key)
		return nil
	}
	return fmt.Errorf("not retried for %v after the last attempt gave up %v ago: %w",
		m.window, ago.Round(time.Millisecond), f.err)
}

// note remembers that key's fetch failed with err, which matches
// storage.ErrUnavailable. Expired entries are dropped on the way.
func (m *failMemo) note(key string, err error) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, f := range m.failed {
		if now.Sub(f.at) >= m.window {
			delete(m.failed, k)
		}
	}
	m.failed[key] = memoFailure{err: err, at: now}
}
