package gcs

import (
	"testing"
	"time"

	gstorage "cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/oxefs/oxefs/internal/testkit"
)

// The shared GCS test helpers (internal/testkit) under this package's
// names.
const (
	testBucket = testkit.GCSBucket
	testPrefix = testkit.GCSPrefix
)

// notHung bounds how long a test waits for a call that must return.
const notHung = 10 * time.Second

type fault = testkit.Fault

var (
	pass      = testkit.Pass
	respond   = testkit.Respond
	dropAfter = testkit.DropAfter
	rangeFrom = testkit.RangeFrom
)

func startFakeGCS(t testing.TB, objects map[string][]byte) *fakestorage.Server {
	return testkit.StartFakeGCS(t, objects)
}

func newTestClient(t testing.TB, baseURL string) *gstorage.Client {
	return testkit.NewGCSClient(t, baseURL)
}

func randomBytes(t testing.TB, n int) []byte { return testkit.RandomBytes(t, n) }

func newFaultProxy(t testing.TB, upstream string, plan func(i int) fault) *testkit.FaultProxy {
	return testkit.NewFaultProxy(t, upstream, plan)
}

func newOffsetFaultProxy(t testing.TB, upstream string, plan func(off int64, nth int) fault) *testkit.FaultProxy {
	return testkit.NewOffsetFaultProxy(t, upstream, plan)
}
