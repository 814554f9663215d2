package loader

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage/retry"
)

// TestLeRobotFlippedFramingIsFetchedAgain: a byte flipped in transit in
// what LeRobot's parsers check (an MP4 box header at the start of each
// video file, the parquet magic at the end of each data file) fails the
// parse of fresh bytes, which then drops the ranges it read and reads
// them again, instead of calling the file corrupt: every episode and
// frame equals the local read, cold and after a restart with no faults.
func TestLeRobotFlippedFramingIsFetchedAgain(t *testing.T) {
	requireVideo(t)
	dir := filepath.Join(lerobotFixtures, "lerobot_av1")
	files := testkit.ReadDirFiles(t, dir)
	upstream := testkit.StartFakeGCS(t, files)
	var flip atomic.Bool
	flip.Store(true)
	proxy := testkit.NewRequestFaultProxy(t, upstream.URL(), func(r testkit.SeenRequest, nth int) testkit.Fault {
		if !flip.Load() || nth != 0 || r.Method != "GET" || strings.HasPrefix(r.Path, "/storage/v1/") {
			return testkit.Pass()
		}
		if strings.HasSuffix(r.Path, ".mp4") && strings.HasPrefix(r.Range, "bytes=0-") {
			return testkit.FlipAt(2) // the ftyp box's size
		}
		for name, b := range files {
			if strings.HasPrefix(name, "data/") && strings.HasSuffix(r.Path, "/"+name) && strings.HasPrefix(r.Range, "bytes=0-") {
				return testkit.FlipAt(int64(len(b)) - 2) // the parquet magic at its end
			}
		}
		return testkit.Pass()
	})
	cacheDir := t.TempDir()
	near := openLocal(t, dir)
	keys := episodeKeys(t, near)
	dec, err := frames.NewDecoder(frames.DecoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	ctx := context.Background()
	decode := func(ep episode.Episode) []byte {
		out, err := decodeCamera(ctx, dec, ep, "observation.images.top", endsAndMiddle(ep))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, pass := range []string{"cold, with flips", "restart, no faults"} {
		st, err := OpenStorage(StorageOptions{CacheDir: cacheDir, Disk: 1 << 30, Log: testkit.TestLogger(t),
			Retry: retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxElapsed: time.Second, StallTimeout: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		data, err := format.Open(ctx, "remote", gcsSource(t, proxy.URL()), &format.Env{Store: st.Store})
		if err != nil {
			t.Fatalf("%s: %v", pass, err)
		}
		remote := mustLeRobot(t, data)
		for i, key := range keys {
			a, err := remote.Episode(ctx, key)
			if err != nil {
				t.Fatalf("%s: episode %d from gs://: %v", pass, i, err)
			}
			b, err := near.Episode(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if s := testkit.Diff(decode(b), decode(a)); s.Max != 0 {
				t.Errorf("%s: episode %d: frames differ between gs:// and local: %v", pass, i, s)
			}
		}
		st.Close()
		if flip.Load() && proxy.Flipped() == 0 {
			t.Fatal("the proxy flipped nothing: the test tests nothing")
		}
		flip.Store(false)
	}
}
