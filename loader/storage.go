package loader

import (
	"log/slog"

	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/diskcache"
	"github.com/oxefs/oxefs/storage/offline"
	"github.com/oxefs/oxefs/storage/ratelimit"
	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/store"
)

// StorageOptions are the flags that shape the storage stack.
type StorageOptions struct {
	// CacheDir holds the disk cache of remote shards and the persistent
	// indexes.
	CacheDir string
	// Disk bounds the disk cache in bytes.
	Disk int64
	// Retry bounds fetches from remote sources; zero fields take defaults.
	Retry retry.Policy
	// MaxFetchRate caps the bytes per second fetched from remote sources,
	// all together; 0 means no cap.
	MaxFetchRate int64
	// Offline never contacts a source whose objects are not local files:
	// its metadata comes from what `oxefs warm` recorded (store.Options.Offline)
	// and its shards only from the disk cache (storage/offline).
	Offline bool
	// VerifyRanges is how a ranged read of a remote object with no check
	// of its own (a video's samples, a parquet block) is verified: two
	// copies that must agree (the zero value), or none
	// (diskcache.VerifyRanges).
	VerifyRanges diskcache.VerifyRanges
	Log          *slog.Logger
}

// Storage is the storage stack every dataset of a daemon shares, and the
// store built on it. Each source is read as
//
//	ratelimit(retry(backend))             metadata, stats, and the fetches below
//	diskcache(ratelimit(retry(backend)))  shards, unless the backend's objects are local files
//
// so a backend only reads and classifies its errors; the decorators add the
// rest. Offline, a source whose objects are not local files is read as
//
//	offline(backend)                      nothing: every read is a *offline.NotCachedError
//	diskcache(offline(backend))           the shards already cached, and no others
type Storage struct {
	Disk  *diskcache.Cache
	Fetch retry.Stats // every fetch's attempts, retries, bytes and failures
	Store *store.Store

	policy  retry.Policy
	limit   *ratelimit.Limiter
	offline bool
	log     *slog.Logger
}

// OpenStorage opens the disk cache and the store over the stack.
func OpenStorage(opts StorageOptions) (*Storage, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Retry == (retry.Policy{}) {
		opts.Retry = retry.DefaultPolicy()
	}
	disk, err := diskcache.Open(opts.CacheDir, opts.Disk, opts.Log, opts.Retry.MemoWindow())
	if err != nil {
		return nil, err
	}
	disk.SetVerifyRanges(opts.VerifyRanges)
	s := &Storage{Disk: disk, policy: opts.Retry, limit: ratelimit.NewLimiter(opts.MaxFetchRate), offline: opts.Offline, log: opts.Log}
	s.Store, err = store.NewStore(store.Options{IndexDir: opts.CacheDir, Disk: disk, Remote: s.remote, Offline: opts.Offline, Log: opts.Log})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// remote decorates one source with retries and the shared rate limit, or,
// offline, stands in for a source whose objects are not local files.
func (s *Storage) remote(src storage.Backend) storage.Backend {
	if s.offline && !storage.IsFiler(src) {
		return offline.New(src)
	}
	return ratelimit.New(retry.New(src, s.policy, &s.Fetch, s.log), s.limit)
}

// Close stops the store's shared work.
func (s *Storage) Close() { s.Store.Close() }
