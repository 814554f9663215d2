package loader

import (
	"context"
	"errors"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/storage/retry"
)

// TestLeRobotFromGCS reads lerobot_av1 from a gs:// source (fake-gcs-server
// through the real client, behind a proxy that fails some requests with
// 503): the storage stack's retries carry it, and every episode and every
// frame equals the local read. A source that keeps failing is a read error,
// not corrupt data.
func TestLeRobotFromGCS(t *testing.T) {
	requireVideo(t)
	dir := filepath.Join(lerobotFixtures, "lerobot_av1")
	upstream := testkit.StartFakeGCS(t, testkit.ReadDirFiles(t, dir))
	var requests atomic.Int64
	var dead atomic.Bool
	proxy := testkit.NewFaultProxy(t, upstream.URL(), func(int) testkit.Fault {
		if n := requests.Add(1); dead.Load() || n%5 == 0 {
			return testkit.Respond(503)
		}
		return testkit.Pass()
	})
	st, err := OpenStorage(StorageOptions{CacheDir: t.TempDir(), Disk: 1 << 30, Log: testkit.TestLogger(t),
		Retry: retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxElapsed: time.Second, StallTimeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	src := gcsSource(t, proxy.URL())
	data, err := format.Open(ctx, "remote", src, &format.Env{Store: st.Store})
	if err != nil {
		t.Fatal(err)
	}
	remote := mustLeRobot(t, data)
	near := openLocal(t, dir)
	keys := episodeKeys(t, near)
	dec, err := frames.NewDecoder(frames.DecoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	decode := func(ep episode.Episode) []byte {
		out, err := decodeCamera(ctx, dec, ep, "observation.images.top", endsAndMiddle(ep))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for i, key := range keys {
		a, err := remote.Episode(ctx, key)
		if err != nil {
			t.Fatalf("episode %d from gs://: %v", i, err)
		}
		b, err := near.Episode(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		fa, fb := testkit.Floats(t, a, "action"), testkit.Floats(t, b, "action")
		if len(fa) != len(fb) || fa[0] != fb[0] || fa[len(fa)-1] != fb[len(fb)-1] {
			t.Errorf("episode %d: actions differ between gs:// and local", i)
		}
		if st := testkit.Diff(decode(b), decode(a)); st.Max != 0 {
			t.Errorf("episode %d: frames differ between gs:// and local: %v", i, st)
		}
	}
	if requests.Load() < 10 {
		t.Errorf("only %d requests reached the proxy", requests.Load())
	}
	dead.Store(true)
	key := keys[2]
	fresh, err := format.Open(ctx, "remote", src, &format.Env{Store: st.Store})
	if err == nil {
		_, err = fresh.Episode(ctx, key)
	}
	if err == nil || errors.Is(err, episode.ErrCorrupt) {
		t.Errorf("a dead source: %v, want a read error that is not corrupt data", err)
	}
}

// TestLeRobotVideoFromDiskCache: the video bytes of a remote LeRobot
// dataset's episodes are kept in the disk cache. After a first pass over
// every frame of every episode, a second pass, and a pass after a restart
// over the same cache directory, make no request for an MP4 file while
// decoding, and after the restart loading the episodes reads none either
// (the parser's reads of the sample tables are cached too); every frame
// equals the local read.
func TestLeRobotVideoFromDiskCache(t *testing.T) {
	requireVideo(t)
	ctx := context.Background()
	dir := filepath.Join(lerobotFixtures, "lerobot_av1")
	upstream := testkit.StartFakeGCS(t, testkit.ReadDirFiles(t, dir))
	proxy := testkit.NewFaultProxy(t, upstream.URL(), func(int) testkit.Fault { return testkit.Pass() })
	mp4Requests := func() int { return requests(proxy, 0, ".mp4", false) }
	mp4Reads := func() int { return requests(proxy, 0, ".mp4", true) }
	var loadReads int // MP4 reads while loading episodes, in the last decodeAll
	near := openLocal(t, dir)
	keys := episodeKeys(t, near)
	cacheDir := t.TempDir()
	src := gcsSource(t, proxy.URL())
	// decodeAll decodes every frame of every video camera of every
	// episode, comparing it with the local read, and returns the MP4
	// requests made while decoding (not while loading episodes).
	decodeAll := func(data format.Dataset) int {
		dec, err := frames.NewDecoder(frames.DecoderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer dec.Close()
		decode := func(ep episode.Episode, cam string) []byte {
			out, err := decodeCamera(ctx, dec, ep, cam, nil)
			if err != nil {
				t.Fatalf("%s %s: %v", ep.ID(), cam, err)
			}
			return out
		}
		var eps, local []episode.Episode
		loadStart := mp4Reads()
		for i, key := range keys {
			a, err := data.Episode(ctx, key)
			if err != nil {
				t.Fatalf("episode %d from gs://: %v", i, err)
			}
			b, err := near.Episode(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			eps, local = append(eps, a), append(local, b)
		}
		loadReads = mp4Reads() - loadStart
		before := mp4Requests()
		for i := range eps {
			for _, cam := range []string{"observation.images.top", "observation.images.wrist"} {
				if st := testkit.Diff(decode(local[i], cam), decode(eps[i], cam)); st.Max != 0 {
					t.Errorf("episode %d %s: frames differ between gs:// and local: %v", i, cam, st)
				}
			}
		}
		return mp4Requests() - before
	}
	open := func() (*Storage, format.Dataset) { return openRemote(t, src, cacheDir, 1<<30) }
	st, data := open()
	if n := decodeAll(data); n == 0 {
		t.Fatal("the first pass made no request for an MP4 file: the test does not see the reads")
	}
	if n := decodeAll(data); n != 0 {
		t.Errorf("a second pass made %d requests for MP4 files; want all frames from the disk cache", n)
	}
	st.Close()
	st, data = open()
	defer st.Close()
	if n := decodeAll(data); n != 0 {
		t.Errorf("after a restart, decoding made %d requests for MP4 files; want all frames from the disk cache", n)
	}
	if loadReads != 0 {
		t.Errorf("after a restart, loading the episodes read MP4 files %d times; want their sample tables read from the disk cache", loadReads)
	}
}

// TestLeRobotVideoRewritten: a remote video file rewritten (a new
// generation) after its sample table was read is not read as the new
// bytes under the old table: decoding fails with an error that says the
// file changed, which is a read error, not corrupt data.
func TestLeRobotVideoRewritten(t *testing.T) {
	requireVideo(t)
	ctx := context.Background()
	dir := filepath.Join(lerobotFixtures, "lerobot_av1")
	objects := testkit.ReadDirFiles(t, dir)
	upstream := testkit.StartFakeGCS(t, objects)
	src := gcsSource(t, upstream.URL())
	st, data := openRemote(t, src, t.TempDir(), 1<<30)
	defer st.Close()
	key := episodeKeys(t, mustLeRobot(t, data))[0]
	ep, err := data.Episode(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	const file = "videos/observation.images.top/chunk-000/file-000.mp4"
	upstream.CreateObject(fakestorage.Object{
		ObjectAttrs: fakestorage.ObjectAttrs{BucketName: testkit.GCSBucket, Name: path.Join(testkit.GCSPrefix, file)},
		Content:     objects[file],
	})
	v, err := ep.Feature("observation.images.top")
	if err != nil {
		t.Fatal(err)
	}
	dec, err := frames.NewDecoder(frames.DecoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	out := make([]byte, 48*64*3)
	err = (&frames.Video{Key: "top", Steps: ep.Steps(), Stream: v.(episode.Video)}).Decode(ctx, dec, []int{0}, frames.Slot{Buf: out, Frames: 1, H: 48, W: 64})
	if err == nil || !strings.Contains(err.Error(), "changed since its sample table was read") || errors.Is(err, episode.ErrCorrupt) {
		t.Fatalf("decoding from a rewritten file: %v; want a read error saying it changed", err)
	}
	t.Log(err)
}

// TestLeRobotVideoIndexRequests: reading a remote video file's sample
// table walks its box headers from one read-ahead, not one request per
// header: loading an episode asks for each of its two cameras' files at
// most three times (its identity and one read, fetched as two copies that
// must agree, --verify-ranges twice; the fixture's files are small).
func TestLeRobotVideoIndexRequests(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(lerobotFixtures, "lerobot_av1")
	upstream := testkit.StartFakeGCS(t, testkit.ReadDirFiles(t, dir))
	proxy := testkit.NewFaultProxy(t, upstream.URL(), func(int) testkit.Fault { return testkit.Pass() })
	src := gcsSource(t, proxy.URL())
	st, data := openRemote(t, src, t.TempDir(), 1<<30)
	defer st.Close()
	before := len(proxy.Requests())
	key := episodeKeys(t, mustLeRobot(t, data))[0]
	if _, err := data.Episode(ctx, key); err != nil {
		t.Fatal(err)
	}
	var mp4 []string
	for _, r := range proxy.Requests()[before:] {
		if strings.Contains(r.Path, ".mp4") {
			mp4 = append(mp4, r.Method+" "+r.Path+" "+r.Range)
		}
	}
	if len(mp4) == 0 || len(mp4) > 6 {
		t.Errorf("loading an episode with two video cameras made %d requests for MP4 files, want 1 to 6:\n%s", len(mp4), strings.Join(mp4, "\n"))
	}
}

// TestLeRobotVideoDiskTooSmall: when the disk cache cannot keep an
// episode's video bytes (here, more than its whole budget), frames are read
// from the source instead: every frame equals the local read.
func TestLeRobotVideoDiskTooSmall(t *testing.T) {
	requireVideo(t)
	ctx := context.Background()
	dir := filepath.Join(lerobotFixtures, "lerobot_av1")
	upstream := testkit.StartFakeGCS(t, testkit.ReadDirFiles(t, dir))
	src := gcsSource(t, upstream.URL())
	st, data := openRemote(t, src, t.TempDir(), 256)
	defer st.Close()
	near := openLocal(t, dir)
	keys := episodeKeys(t, near)
	dec, err := frames.NewDecoder(frames.DecoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for i, key := range keys {
		var got [2][]byte
		for k, d := range []episode.Dataset{data, near} {
			ep, err := d.Episode(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			v, err := ep.Feature("observation.images.wrist")
			if err != nil {
				t.Fatal(err)
			}
			idx := []int{0, ep.Steps() - 1}
			got[k] = make([]byte, len(idx)*48*64*3)
			src := &frames.Video{Key: "wrist", Steps: ep.Steps(), Stream: v.(episode.Video)}
			if err := src.Decode(ctx, dec, idx, frames.Slot{Buf: got[k], Frames: len(idx), H: 48, W: 64}); err != nil {
				t.Fatalf("episode %d: %v", i, err)
			}
		}
		if st := testkit.Diff(got[1], got[0]); st.Max != 0 {
			t.Errorf("episode %d: frames differ between gs:// and local: %v", i, st)
		}
	}
}

// TestLeRobotDataFromDiskCache: the data files of a remote LeRobot dataset
// are kept in the disk cache by blocks and identified once: loading every
// episode a second time contacts the source for no data file, and after a
// restart over the same cache directory only their identities are asked
// again, no bytes read. Every episode's actions equal the local read.
func TestLeRobotDataFromDiskCache(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(lerobotFixtures, "lerobot_av1")
	upstream := testkit.StartFakeGCS(t, testkit.ReadDirFiles(t, dir))
	proxy := testkit.NewFaultProxy(t, upstream.URL(), func(int) testkit.Fault { return testkit.Pass() })
	near := openLocal(t, dir)
	keys := episodeKeys(t, near)
	src := gcsSource(t, proxy.URL())
	cacheDir := t.TempDir()
	// loadAll loads every episode and returns the requests for data files
	// it made: all of them, and the reads among them.
	loadAll := func(data format.Dataset) (all, reads int) {
		before := len(proxy.Requests())
		for i, key := range keys {
			a, err := data.Episode(ctx, key)
			if err != nil {
				t.Fatalf("episode %d from gs://: %v", i, err)
			}
			b, err := near.Episode(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if fa, fb := testkit.Floats(t, a, "action"), testkit.Floats(t, b, "action"); !slices.Equal(fa, fb) {
				t.Errorf("episode %d: actions differ between gs:// and local", i)
			}
		}
		return requests(proxy, before, "data/chunk-", false), requests(proxy, before, "data/chunk-", true)
	}
	open := func() (*Storage, format.Dataset) { return openRemote(t, src, cacheDir, 1<<30) }
	st, data := open()
	if all, reads := loadAll(data); reads == 0 || all == 0 {
		t.Fatalf("the first pass made %d requests for data files, %d reads: the test does not see them", all, reads)
	}
	if all, _ := loadAll(data); all != 0 {
		t.Errorf("a second pass made %d requests for data files; want none", all)
	}
	st.Close()
	st, data = open()
	defer st.Close()
	if all, reads := loadAll(data); reads != 0 || all != 3 {
		t.Errorf("after a restart: %d requests for data files, %d of them reads; want 3 (one identity per file), no read", all, reads)
	}
}

// gcsSource is the fixture objects' prefix read from the fake GCS server,
// or a proxy in front of it, at url.
func gcsSource(t testing.TB, url string) storage.Backend {
	return gcs.NewWithClient(testkit.NewGCSClient(t, url), testkit.GCSBucket, path.Clean(testkit.GCSPrefix))
}

// openRemote opens a storage stack over cacheDir, with a disk cache of disk
// bytes, and the dataset at src through it. The caller closes the storage.
func openRemote(t *testing.T, src storage.Backend, cacheDir string, disk int64) (*Storage, format.Dataset) {
	t.Helper()
	st, err := OpenStorage(StorageOptions{CacheDir: cacheDir, Disk: disk, Log: testkit.TestLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	data, err := format.Open(context.Background(), "remote", src, &format.Env{Store: st.Store})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return st, data
}

// mustLeRobot returns data, failing the test unless the registry opened
// it as LeRobot.
func mustLeRobot(t testing.TB, data format.Dataset) format.Dataset {
	t.Helper()
	if got := format.NameOf(data); got != "LeRobot" {
		t.Fatalf("opened as %T (format %q), want a LeRobot dataset", data, got)
	}
	return data
}

// openLocal opens the LeRobot dataset in dir, read in place, through the
// registry: the local read a remote one is compared with.
func openLocal(t *testing.T, dir string) format.Dataset {
	t.Helper()
	d, err := format.Open(context.Background(), "near", local.New(dir), &format.Env{Store: newStore(t, t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	return mustLeRobot(t, d)
}

// episodeKeys lists the key of every episode of d, split by split, shard
// by shard.
func episodeKeys(t testing.TB, d format.Dataset) []episode.Key {
	t.Helper()
	info := d.Info()
	var ranges []episode.Range
	for _, name := range info.SplitNames() {
		s, _ := info.Split(name)
		ranges = append(ranges, episode.Range{Split: name, To: s.Episodes()})
	}
	segs, err := info.Segments(ranges)
	if err != nil {
		t.Fatal(err)
	}
	var keys []episode.Key
	for _, s := range segs {
		for r := range s.Count {
			keys = append(keys, episode.Key{Split: s.Split, Shard: s.Shard, Record: s.First + r})
		}
	}
	if len(keys) < 3 {
		t.Fatalf("%d episodes, want at least 3", len(keys))
	}
	return keys
}

// requests counts the proxy's requests, from the from-th on, whose path
// contains part; with ranged, only those that read a byte range.
func requests(p *testkit.FaultProxy, from int, part string, ranged bool) int {
	n := 0
	for _, r := range p.Requests()[from:] {
		if strings.Contains(r.Path, part) && (!ranged || r.Range != "") {
			n++
		}
	}
	return n
}

// decodeCamera decodes the frames idx (nil: every frame) of the camera cam
// of ep at 48×64, the size the lerobot_av1 fixture's frame tests compare
// at.
func decodeCamera(ctx context.Context, dec *frames.Decoder, ep episode.Episode, cam string, idx []int) ([]byte, error) {
	v, err := ep.Feature(cam)
	if err != nil {
		return nil, err
	}
	if idx == nil {
		idx = make([]int, ep.Steps())
		for i := range idx {
			idx[i] = i
		}
	}
	out := make([]byte, len(idx)*48*64*3)
	src := &frames.Video{Key: cam, Steps: ep.Steps(), Stream: v.(episode.Video)}
	return out, src.Decode(ctx, dec, idx, frames.Slot{Buf: out, Frames: len(idx), H: 48, W: 64})
}

// endsAndMiddle are the frame indices of ep's first, middle and last step.
func endsAndMiddle(ep episode.Episode) []int { return []int{0, ep.Steps() / 2, ep.Steps() - 1} }
