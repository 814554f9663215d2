package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/diskcache"
)

// Options configures a Store. The storage stack is the caller's: the
// composition root decides which decorators a source gets.
type Options struct {
	// IndexDir holds what is kept per source beside the disk cache
	// (indexes, derived files, offline records): a directory per source
	// under IndexDir/index. Required.
	IndexDir string
	// Disk keeps the objects of sources whose objects are not local files
	// (not a storage.Filer); nil: no disk cache, and such a source is read
	// from the source each time, where its format allows it.
	Disk *diskcache.Cache
	// Remote decorates each source for every read that does not go through
	// the disk cache and for the disk cache's own fetches: retries and rate
	// limits (storage/retry, storage/ratelimit). Nil: sources as they are.
	Remote func(storage.Backend) storage.Backend
	// Offline opens every source whose objects are not local files from
	// its offline record (see SaveRecord), never from the source. Remote
	// must then stand for sources that are never contacted
	// (storage/offline), so objects come only from the disk cache.
	Offline bool
	Log     *slog.Logger
}

// Store is what the datasets of a daemon share, whatever their format:
// the storage stack a source is read through (Wrap), the disk cache and
// the versioned ranged reads through it (Source), the per-source index
// directory (derived files, offline records) and the statistics of every
// format's episode loads. Loaded episodes are not kept here: the
// composition root puts a RAM cache (package episodes) in front of each
// dataset.
type Store struct {
	// dependencies
	log    *slog.Logger
	disk   *diskcache.Cache
	remote func(storage.Backend) storage.Backend

	// constants
	indexDir string
	offline  bool

	// ctx is the daemon's lifetime: shared work (a download several
	// readers wait for) runs under it, so one reader giving up does not
	// cancel it for the others.
	ctx     context.Context
	cancel  context.CancelFunc
	running sync.WaitGroup // shared work in flight, waited for by Close

	// indexSlots bounds the remote objects indexed at once (see
	// Source.IndexSlot).
	indexSlots *semaphore.Weighted

	mu     sync.Mutex
	closed bool // guarded by mu: no shared work may begin once set

	Stats Stats
}

// Stats counts episode traffic, for every format.
type Stats struct {
	// EpisodesLoaded counts the episodes loaded (parsed from their bytes)
	// and BytesRead the bytes they were loaded from.
	EpisodesLoaded, BytesRead atomic.Int64
	// Hops counts the small reads that indexed remote objects (RLDS
	// header hops). The ranged reads themselves are the disk cache's to
	// count (diskcache.Stats).
	Hops atomic.Int64
}

// Loaded counts one episode loaded from n bytes.
func (s *Stats) Loaded(n int64) {
	s.EpisodesLoaded.Add(1)
	s.BytesRead.Add(n)
}

// indexParallel bounds the remote objects indexed at once, per store.
// A batch of a 29-dataset mix touches 60 to 90 shards, and their headers
// are tiny requests: latency, not bandwidth, bounds them.
const indexParallel = 128

// NewStore returns a store over the given storage stack.
func NewStore(opts Options) (*Store, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.IndexDir == "" {
		return nil, errors.New("store: no index directory")
	}
	s := &Store{log: opts.Log, disk: opts.Disk, remote: opts.Remote, indexDir: opts.IndexDir, offline: opts.Offline,
		indexSlots: semaphore.NewWeighted(indexParallel)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Close stops shared work and waits for the work in flight and for the
// disk-cache fills of its sources.
func (s *Store) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.running.Wait()
	if s.disk != nil {
		// The disk-cache fills of this store's sources run under s.ctx;
		// once they have noticed, nothing writes in the cache directory.
		s.disk.Wait()
	}
}

// Begin registers shared work, which Close waits for; done ends it. ok is
// false, and there is nothing to end, once the store is closing.
func (s *Store) Begin() (done func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	s.running.Add(1)
	return s.running.Done, true
}

// Context is the store's lifetime, for shared work: it is done once the
// store is closing.
func (s *Store) Context() context.Context { return s.ctx }

// Log is the store's logger.
func (s *Store) Log() *slog.Logger { return s.log }

// Offline reports whether the store opens remote sources from their
// offline records (Options.Offline).
func (s *Store) Offline() bool { return s.offline }

// Disk returns the disk cache; nil when the store has none. It is for the
// composition root (statistics) and tests: formats read through Source.
func (s *Store) Disk() *diskcache.Cache { return s.disk }

// DiskBudget returns the disk cache's byte bound, 0 when the store has
// none.
func (s *Store) DiskBudget() int64 {
	if s.disk == nil {
		return 0
	}
	return s.disk.Budget()
}

// Wrap decorates a source the way the store reads remote sources
// (retries, the shared rate limit, or offline stand-ins).
func (s *Store) Wrap(src storage.Backend) storage.Backend {
	if s.remote == nil {
		return src
	}
	return s.remote(src)
}

// cached returns src read through the store's remote stack (see Wrap) and
// its disk cache: entries of every source share the budget, LRU and
// locks, each source under its own key prefix. It is nil for a local
// source, which is read in place, and for a store without a disk cache.
// Only a Source holds it: formats read through Source.
func (s *Store) cached(src storage.Backend) *diskcache.Backend {
	if storage.IsFiler(src) || s.disk == nil {
		return nil
	}
	return s.disk.Wrap(s.Wrap(src), Slug(src.Location()), s.ctx)
}

// Dir is the index directory of the source src: where its indexes,
// derived files and offline record live.
func (s *Store) Dir(src storage.Backend) string {
	return filepath.Join(s.indexDir, "index", Slug(src.Location()))
}

// Slug is a readable, collision-free directory name for the source at
// uri: its index directory's, and its key prefix in the disk cache.
func Slug(uri string) string {
	sum := sha256.Sum256([]byte(uri))
	parts := strings.FieldsFunc(uri, func(r rune) bool { return r == '/' || r == ':' })
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, strings.Join(parts, "-"))
	return clean + "-" + hex.EncodeToString(sum[:4])
}
