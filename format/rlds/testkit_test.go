package rlds

import (
	"log/slog"
	"testing"

	gcstorage "cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/diskcache"
	"github.com/oxefs/oxefs/storage/retry"
)

// The shared GCS test helpers (internal/testkit) under this package's
// names.
const (
	testBucket = testkit.GCSBucket
	testPrefix = testkit.GCSPrefix
)

type fault = testkit.Fault

var (
	respond   = testkit.Respond
	dropAfter = testkit.DropAfter
	pass      = testkit.Pass
)

func startFakeGCS(t testing.TB, objects map[string][]byte) *fakestorage.Server {
	return testkit.StartFakeGCS(t, objects)
}

func newTestClient(t testing.TB, baseURL string) *gcstorage.Client {
	return testkit.NewGCSClient(t, baseURL)
}

func newFaultProxy(t testing.TB, upstream string, plan func(i int) fault) *testkit.FaultProxy {
	return testkit.NewFaultProxy(t, upstream, plan)
}

func testLog(t testing.TB) *slog.Logger { return testkit.TestLogger(t) }

func rangeFrom(off int64) string { return testkit.RangeFrom(off) }

// stackOptions builds the storage stack the composition root builds (a
// disk cache under cacheDir of budget bytes; retries with policy, defaults
// where zero) and returns the store's options and the fetch counters.
func stackOptions(t testing.TB, cacheDir string, budget int64, policy retry.Policy) (Options, *retry.Stats) {
	t.Helper()
	if policy == (retry.Policy{}) {
		policy = retry.DefaultPolicy()
	}
	log := testLog(t)
	disk, err := diskcache.Open(cacheDir, budget, log, policy.MemoWindow())
	if err != nil {
		t.Fatal(err)
	}
	stats := new(retry.Stats)
	remote := func(src storage.Backend) storage.Backend { return retry.New(src, policy, stats, log) }
	return Options{IndexDir: cacheDir, Disk: disk, Remote: remote, Log: log}, stats
}

// mustOptions drops the fetch counters of stackOptions.
func mustOptions(opts Options, _ *retry.Stats) Options { return opts }
