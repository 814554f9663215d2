package format

import (
	"sync"

	"github.com/oxefs/oxefs/store"
)

// Env is what the datasets of one daemon are opened with, and share.
type Env struct {
	// Store is what every dataset of the daemon reads remote bytes
	// through: the storage decorators, the disk cache, and the index
	// directory that keeps derived files and offline records.
	Store *store.Store
	// IndexBytes bounds, together, the sample tables of video files kept
	// for the datasets opened with this Env; 0 leaves each dataset a cache
	// of its format's default size.
	IndexBytes int64

	mu     sync.Mutex
	shared map[string]any // guarded by mu: each format's shared state, by format name
}

// Offline reports whether the store never contacts remote sources.
func (e *Env) Offline() bool { return e.Store.Offline() }

// Shared returns the state that the datasets of format name opened with e
// share, made by newState on first use.
func (e *Env) Shared(name string, newState func() any) any {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.shared[name]; ok {
		return s
	}
	if e.shared == nil {
		e.shared = map[string]any{}
	}
	s := newState()
	e.shared[name] = s
	return s
}

// IndexStats describes a cache of video sample tables (stats.json's
// video_index).
type IndexStats struct {
	// Bound is the cache's bound, Bytes and Files what it holds now.
	Bound, Bytes int64
	Files        int
	// Hits are loads that found their file's table kept; Parses are
	// tables read and parsed; Evicted are tables dropped for room.
	Hits, Parses, Evicted int64
}

// IndexReporter is shared state (see Env.Shared) that keeps video sample
// tables.
type IndexReporter interface {
	IndexStats() IndexStats
}

// IndexStats adds up the video sample-table caches of the formats opened
// with e.
func (e *Env) IndexStats() IndexStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out IndexStats
	for _, s := range e.shared {
		r, ok := s.(IndexReporter)
		if !ok {
			continue
		}
		st := r.IndexStats()
		out.Bound += st.Bound
		out.Bytes += st.Bytes
		out.Files += st.Files
		out.Hits += st.Hits
		out.Parses += st.Parses
		out.Evicted += st.Evicted
	}
	return out
}
