package retry

import (
	"testing"

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

type (
	fault       = testkit.Fault
	seenRequest = testkit.SeenRequest
)

var (
	pass       = testkit.Pass
	respond    = testkit.Respond
	dropAfter  = testkit.DropAfter
	hangAfter  = testkit.HangAfter
	hangAtOnce = testkit.HangAtOnce
	always     = testkit.Always
	rangeFrom  = testkit.RangeFrom
)

func startFakeGCS(t testing.TB, objects map[string][]byte) *fakestorage.Server {
	return testkit.StartFakeGCS(t, objects)
}

func newTestClient(t testing.TB, baseURL string) *gstorage.Client {
	return testkit.NewGCSClient(t, baseURL)
}

func randomBytes(t testing.TB, n int) []byte { return testkit.RandomBytes(t, n) }

func newOffsetFaultProxy(t testing.TB, upstream string, plan func(off int64, nth int) fault) *testkit.FaultProxy {
	return testkit.NewOffsetFaultProxy(t, upstream, plan)
}
