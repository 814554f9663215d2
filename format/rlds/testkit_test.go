package rlds

import (
	"log/slog"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/oxefs/oxefs/internal/testkit"
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

func newTestClient(t testing.TB, baseURL string) *storage.Client {
	return testkit.NewGCSClient(t, baseURL)
}

func newFaultProxy(t testing.TB, upstream string, plan func(i int) fault) *testkit.FaultProxy {
	return testkit.NewFaultProxy(t, upstream, plan)
}

func testLog(t testing.TB) *slog.Logger { return testkit.TestLogger(t) }

func rangeFrom(off int64) string { return testkit.RangeFrom(off) }
