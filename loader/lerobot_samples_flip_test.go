package loader

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage/diskcache"
	"github.com/oxefs/oxefs/storage/retry"
)

// TestLeRobotFlippedSamplesAreCompared: a byte flipped in transit where no
// LeRobot parser looks (an AV1 sample in a video's mdat, a value in a data
// parquet file's block) is caught by comparing two copies of the range
// (--verify-ranges twice): every action and every frame of both cameras
// equals the local read, cold with the flips, and after a restart over the
// same cache with no faults, which reads every range from the cache
// (what was kept is right, and the agreed ranges were kept).
func TestLeRobotFlippedSamplesAreCompared(t *testing.T) {
	requireVideo(t)
	dir := filepath.Join(lerobotFixtures, "lerobot_av1")
	files := testkit.ReadDirFiles(t, dir)
	upstream := testkit.StartFakeGCS(t, files)
	var flip atomic.Bool
	flip.Store(true)
	proxy := testkit.NewRequestFaultProxy(t, upstream.URL(), testkit.LeRobotSampleFlips(t, files, &flip))
	cacheDir := t.TempDir()
	near := openLocal(t, dir)
	keys := episodeKeys(t, near)
	ctx := context.Background()
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
		before := len(proxy.Requests())
		compareEpisodes(t, pass, keys, mustLeRobot(t, data), near)
		ranged := requests(proxy, before, "/", true)
		if !flip.Load() && ranged != 0 {
			t.Errorf("%s: %d ranged reads; want every range from the disk cache, kept cold", pass, ranged)
		}
		if flip.Load() {
			if proxy.Flipped() == 0 {
				t.Fatal("the proxy flipped nothing: the test tests nothing")
			}
			s := &st.Disk.Stats
			t.Logf("%s: %d responses flipped; disk cache: %d ranges compared, %d damaged, %d rejected",
				pass, proxy.Flipped(), s.Compared.Load(), s.Damaged.Load(), s.Rejected.Load())
		}
		st.Close()
		flip.Store(false)
	}
}

// TestLeRobotUncheckedRangesCost: with no faults, a cold read of every
// episode asks for each ranged read of a LeRobot file twice under
// --verify-ranges twice and once under off; whole-object reads are not
// doubled. It logs the bytes fetched by ranged reads either way.
func TestLeRobotUncheckedRangesCost(t *testing.T) {
	requireVideo(t)
	dir := filepath.Join(lerobotFixtures, "lerobot_av1")
	upstream := testkit.StartFakeGCS(t, testkit.ReadDirFiles(t, dir))
	near := openLocal(t, dir)
	keys := episodeKeys(t, near)
	ctx := context.Background()
	bytes := map[diskcache.VerifyRanges]int64{}
	for _, v := range []diskcache.VerifyRanges{diskcache.VerifyOff, diskcache.VerifyTwice} {
		proxy := testkit.NewFaultProxy(t, upstream.URL(), func(int) testkit.Fault { return testkit.Pass() })
		st, err := OpenStorage(StorageOptions{CacheDir: t.TempDir(), Disk: 1 << 30, Log: testkit.TestLogger(t), VerifyRanges: v})
		if err != nil {
			t.Fatal(err)
		}
		data, err := format.Open(ctx, "remote", gcsSource(t, proxy.URL()), &format.Env{Store: st.Store})
		if err != nil {
			t.Fatal(err)
		}
		compareEpisodes(t, v.String(), keys, mustLeRobot(t, data), near)
		bytes[v] = st.Disk.Stats.RangeBytes.Load()
		st.Close()
		asked := map[string]int{}
		for _, r := range proxy.Requests() {
			if r.Method == "GET" && r.Range != "" && !strings.HasPrefix(r.Path, "/storage/v1/") {
				asked[r.Path+" "+r.Range]++
			}
		}
		want := 1
		if v == diskcache.VerifyTwice {
			want = 2
		}
		var counts []int
		for _, n := range asked {
			counts = append(counts, n)
		}
		slices.Sort(counts)
		if len(counts) == 0 || counts[0] != want || counts[len(counts)-1] != want {
			t.Errorf("--verify-ranges %s: %d ranges, asked for %v times; want each %d times", v, len(counts), slices.Compact(counts), want)
		}
		t.Logf("--verify-ranges %s: %d ranged requests for %d ranges, %d bytes", v, len(counts)*want, len(counts), bytes[v])
	}
	if bytes[diskcache.VerifyTwice] != 2*bytes[diskcache.VerifyOff] {
		t.Errorf("bytes fetched by ranged reads: %d twice, %d off; want twice the bytes", bytes[diskcache.VerifyTwice], bytes[diskcache.VerifyOff])
	}
}

// compareEpisodes fails the test when an episode of remote differs from
// near's: its actions, or any frame of either camera.
func compareEpisodes(t *testing.T, pass string, keys []episode.Key, remote, near format.Dataset) {
	t.Helper()
	ctx := context.Background()
	dec, err := frames.NewDecoder(frames.DecoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	decode := func(ep episode.Episode, cam string) []byte {
		out, err := decodeCamera(ctx, dec, ep, cam, nil)
		if err != nil {
			t.Errorf("%s: %s %s: %v", pass, ep.ID(), cam, err)
		}
		return out
	}
	for i, key := range keys {
		a, err := remote.Episode(ctx, key)
		if err != nil {
			t.Fatalf("%s: episode %d from gs://: %v", pass, i, err)
		}
		b, err := near.Episode(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(testkit.Floats(t, a, "action"), testkit.Floats(t, b, "action")) {
			t.Errorf("%s: episode %d: actions differ between gs:// and local", pass, i)
		}
		for _, cam := range []string{"observation.images.top", "observation.images.wrist"} {
			if s := testkit.Diff(decode(b, cam), decode(a, cam)); s.Max != 0 {
				t.Errorf("%s: episode %d %s: frames differ between gs:// and local: %v", pass, i, cam, s)
			}
		}
	}
}
