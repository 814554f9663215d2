package lerobot

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/local"
)

// videoFiles returns the distinct video files the dataset's episode table
// names, as index cache keys.
func videoFiles(t *testing.T, d *Dataset) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	for _, e := range d.Episodes() {
		for k, s := range e.Videos {
			p, err := d.videoPath(k, s)
			if err != nil {
				t.Fatal(err)
			}
			files[d.Source.Location()+"/"+p] = true
		}
	}
	return files
}

// loadAll loads every episode of d, checking after each load that the
// cache stays within its bound, and returns the episodes by index.
func loadAll(t *testing.T, d *Dataset) []*Episode {
	t.Helper()
	var eps []*Episode
	for _, e := range d.Episodes() {
		key, ok := d.Key(e.Index)
		if !ok {
			t.Fatalf("episode %d is in no split", e.Index)
		}
		ep, err := d.Episode(context.Background(), key)
		if err != nil {
			t.Fatalf("episode %d: %v", e.Index, err)
		}
		if s := d.index.Stats(); s.Bytes > s.Bound {
			t.Fatalf("after episode %d the index cache holds %d bytes, over its bound of %d", e.Index, s.Bytes, s.Bound)
		}
		eps = append(eps, ep.(*Episode))
	}
	return eps
}

// sameFrames fails unless both episodes show every step of every camera
// with the same sample, described the same.
func sameFrames(t *testing.T, got, want *Episode) {
	t.Helper()
	for k, wv := range want.videos {
		gv := got.videos[k]
		if gv == nil {
			t.Fatalf("%s: camera %s missing", got.ID(), k)
		}
		for s := range wv.shown {
			g, w := (&videoView{v: gv}), (&videoView{v: wv})
			gj, _ := g.Shown(s)
			wj, _ := w.Shown(s)
			go1, gs, gp, gk := g.Sample(gj)
			wo, ws, wp, wk := w.Sample(wj)
			if gj != wj || go1 != wo || gs != ws || gp != wp || gk != wk {
				t.Fatalf("%s camera %s step %d: sample %d (%d+%d pts %d key %v), want %d (%d+%d pts %d key %v)", got.ID(), k, s, gj, go1, gs, gp, gk, wj, wo, ws, wp, wk)
			}
		}
	}
}

// TestEpisodeKeepsItsWindow: a loaded episode holds only the samples of
// its video files that its steps need: from the keyframe before its first
// shown frame to the end of the group of pictures of its last. Those are
// described exactly as the file's index describes them; anything outside
// is empty, and Episode.Size counts what is kept.
func TestEpisodeKeepsItsWindow(t *testing.T) {
	for _, name := range []string{"lerobot_av1", "lerobot_h264", "lerobot_hevc"} {
		t.Run(name, func(t *testing.T) {
			d := openFixture(t, name)
			smaller := 0
			for _, ep := range loadAll(t, d) {
				kept := 0
				for k, vs := range ep.videos {
					x, err := d.index.get(context.Background(), vs.id, d.shared, func(context.Context) (*videoIndex, error) {
						return nil, errors.New("the index of a file just loaded is not cached")
					})
					if err != nil {
						t.Fatal(err)
					}
					v := &videoView{v: vs}
					first, end := vs.first, v.Samples()
					if !x.samples[first].key {
						t.Errorf("%s %s: kept samples start at %d, not a keyframe", ep.ID(), k, first)
					}
					if end < len(x.samples) && !x.samples[end].key {
						t.Errorf("%s %s: kept samples end before %d, not a keyframe", ep.ID(), k, end)
					}
					for j := first; j < end; j++ {
						off, size, pts, key := v.Sample(j)
						s := x.samples[j]
						if off != s.off || size != int(s.size) || pts != s.pts || key != s.key {
							t.Fatalf("%s %s: sample %d described as %d+%d pts %d key %v, the file says %+v", ep.ID(), k, j, off, size, pts, key, s)
						}
					}
					for _, j := range []int{first - 1, end} {
						if _, size, _, _ := v.Sample(j); size != 0 {
							t.Errorf("%s %s: sample %d outside the kept ones has size %d", ep.ID(), k, j, size)
						}
					}
					for s := range vs.shown {
						if j, _ := v.Shown(s); j < first || j >= end {
							t.Errorf("%s %s: step %d shown by sample %d, outside the kept %d..%d", ep.ID(), k, s, j, first, end)
						}
					}
					if end-first < len(x.samples) {
						smaller++
					}
					kept += len(vs.samples)*sampleSize + len(vs.shown)*4
				}
				if ep.Size() < kept {
					t.Errorf("%s: Size %d does not count the %d bytes of video samples kept", ep.ID(), ep.Size(), kept)
				}
			}
			if smaller == 0 {
				t.Error("no episode kept less than its whole video file: the fixture should have several episodes per file")
			}
		})
	}
}

// TestIndexCacheBound: a cache bounded to about one file's index keeps
// within its bound over every load, drops the least recently used index
// for room and parses it again when needed; one bounded below any index
// keeps nothing. The episodes are the same as with a cache that keeps
// everything.
func TestIndexCacheBound(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(fixtures, "lerobot_av1")
	ref := openFixture(t, "lerobot_av1")
	want := loadAll(t, ref)
	files := videoFiles(t, ref)
	if len(files) < 3 {
		t.Fatalf("the fixture has %d video files; the test needs at least 3", len(files))
	}
	var one int64
	for id := range files {
		x, err := ref.index.get(ctx, id, ref.shared, nil)
		if err != nil {
			t.Fatal(err)
		}
		one = max(one, x.bytes())
	}
	for _, bound := range []int64{1, one + one/2} {
		c := NewIndexCache(bound)
		d, err := Open(ctx, "lerobot_av1", local.New(dir), Options{Index: c})
		if err != nil {
			t.Fatal(err)
		}
		got := loadAll(t, d)
		for i := range want {
			sameFrames(t, got[i], want[i])
		}
		s := c.Stats()
		t.Logf("bound %d: %+v", bound, s)
		if s.Evicted == 0 || s.Parses <= int64(len(files)) {
			t.Errorf("bound %d over %d files of up to %d bytes: %d parses, %d evicted; want more parses than files and evictions", bound, len(files), one, s.Parses, s.Evicted)
		}
		if bound == 1 && (s.Files != 0 || s.Bytes != 0) {
			t.Errorf("bound 1: the cache keeps %d files, %d bytes; want nothing", s.Files, s.Bytes)
		}
		if bound > 1 && s.Files == 0 {
			t.Errorf("bound %d: the cache keeps nothing; want the last file used", bound)
		}
	}
}

// TestIndexCacheSharesParses: with room for everything, concurrent loads
// parse each video file once, and two datasets opened from one source with
// one cache share it.
func TestIndexCacheSharesParses(t *testing.T) {
	ctx := context.Background()
	c := NewIndexCache(DefaultIndexBytes)
	src := local.New(filepath.Join(fixtures, "lerobot_av1"))
	var sets []*Dataset
	for _, name := range []string{"a", "b"} {
		d, err := Open(ctx, name, src, Options{Index: c})
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, d)
	}
	var wg sync.WaitGroup
	var loads atomic.Int64
	for _, d := range sets {
		for _, e := range d.Episodes() {
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key, _ := d.Key(e.Index)
					if _, err := d.Episode(ctx, key); err != nil {
						t.Error(err)
					}
					loads.Add(1)
				}()
			}
		}
	}
	wg.Wait()
	files := int64(len(videoFiles(t, sets[0])))
	s := c.Stats()
	cams := int64(len(sets[0].videoKey))
	if s.Parses != files || s.Hits != loads.Load()*cams-files || s.Evicted != 0 {
		t.Errorf("%d loads of %d cameras over %d files: %+v; want %d parses, %d hits, none evicted", loads.Load(), cams, files, s, files, loads.Load()*cams-files)
	}
}

// failingVideos fails every read of an MP4 file while fail is set.
type failingVideos struct {
	storage.Backend
	fail atomic.Bool
}

var errOutage = errors.New("injected outage")

func (f *failingVideos) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if f.fail.Load() && strings.HasSuffix(name, ".mp4") {
		return nil, errOutage
	}
	return f.Backend.Open(ctx, name, off, length)
}

// TestIndexCacheRetriesFailedReads: a video index whose read failed is
// not remembered: the load fails with the read's error (not as corrupt
// data), and the next load reads the file again and succeeds. Bad bytes,
// by contrast, are remembered (TestDamagedDatasets).
func TestIndexCacheRetriesFailedReads(t *testing.T) {
	ctx := context.Background()
	src := &failingVideos{Backend: local.New(filepath.Join(fixtures, "lerobot_av1"))}
	c := NewIndexCache(DefaultIndexBytes)
	d, err := Open(ctx, "lerobot_av1", src, Options{Index: c})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := d.Key(0)
	src.fail.Store(true)
	_, err = d.Episode(ctx, key)
	var ce *episode.CorruptError
	if !errors.Is(err, errOutage) || errors.As(err, &ce) {
		t.Fatalf("load during an outage: %v; want the outage, not corrupt data", err)
	}
	if s := c.Stats(); s.Files != 0 {
		t.Errorf("after a failed read the cache keeps %d files; want none", s.Files)
	}
	src.fail.Store(false)
	if _, err := d.Episode(ctx, key); err != nil {
		t.Fatalf("load after the outage: %v", err)
	}
	if s := c.Stats(); s.Parses != 1+int64(len(d.videoKey)) {
		t.Errorf("parses %d; want 1 failed and %d after", s.Parses, len(d.videoKey))
	}
}

// heldVideos holds every read of an MP4 file until release is closed,
// failing it with its context's error if that ends first; started is
// closed when the first such read begins.
type heldVideos struct {
	storage.Backend
	once    sync.Once
	started chan struct{}
	release chan struct{}
}

func (h *heldVideos) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if strings.HasSuffix(name, ".mp4") {
		h.once.Do(func() { close(h.started) })
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.Backend.Open(ctx, name, off, length)
}

// waitingCtx closes waiting when its Done is first asked for: a reader
// of the index cache has begun to wait.
type waitingCtx struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (w *waitingCtx) Done() <-chan struct{} {
	w.once.Do(func() { close(w.waiting) })
	return w.Context.Done()
}

// TestIndexCacheParseOutlivesItsStarter: the parse two readers share is
// not the first reader's: when it gives up, the second, still waiting,
// gets the table.
func TestIndexCacheParseOutlivesItsStarter(t *testing.T) {
	src := &heldVideos{Backend: local.New(filepath.Join(fixtures, "lerobot_av1")),
		started: make(chan struct{}), release: make(chan struct{})}
	d, err := Open(context.Background(), "lerobot_av1", src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var path string
	for id := range videoFiles(t, d) {
		path = strings.TrimPrefix(id, d.Source.Location()+"/")
		break
	}
	first, cancel := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, err := d.video(first, path)
		firstErr <- err
	}()
	<-src.started
	waiting := &waitingCtx{Context: context.Background(), waiting: make(chan struct{})}
	second := make(chan error, 1)
	go func() {
		x, err := d.video(waiting, path)
		if err == nil && x == nil {
			err = errors.New("no table")
		}
		second <- err
	}()
	<-waiting.waiting
	cancel()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled reader: %v; want context.Canceled", err)
	}
	close(src.release)
	if err := <-second; err != nil {
		t.Fatalf("the reader still waiting: %v; want the table", err)
	}
}
