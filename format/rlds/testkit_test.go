package rlds

import (
	"context"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/internal/testkit/cachekit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/diskcache"
	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/store"
)

// stackOptions builds the storage stack the composition root builds (a
// disk cache under cacheDir of budget bytes; retries with policy, defaults
// where zero) and returns the store's options and the fetch counters.
func stackOptions(t testing.TB, cacheDir string, budget int64, policy retry.Policy) (store.Options, *retry.Stats) {
	t.Helper()
	if policy == (retry.Policy{}) {
		policy = retry.DefaultPolicy()
	}
	log := testkit.TestLogger(t)
	disk := cachekit.Disk(t, cacheDir, budget, log, policy.MemoWindow())
	stats := new(retry.Stats)
	remote := func(src storage.Backend) storage.Backend { return retry.New(src, policy, stats, log) }
	return store.Options{IndexDir: cacheDir, Disk: disk, Remote: remote, Log: log}, stats
}

// mustOptions drops the fetch counters of stackOptions.
func mustOptions(opts store.Options, _ *retry.Stats) store.Options { return opts }

// cacheView is s's disk cache under the key prefix of ds's source, for
// tests that ask what it holds or what a download under way has written.
func cacheView(s *store.Store, ds *Dataset) *diskcache.Backend {
	return s.Disk().Wrap(ds.Source, store.Slug(ds.Source.Location()), context.Background())
}
