package formats

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/internal/testkit/cachekit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/store"
)

// env is an Env over a store with a disk cache, which remote sources
// need.
func env(t *testing.T) *format.Env {
	t.Helper()
	dir := t.TempDir()
	st, err := store.NewStore(store.Options{IndexDir: dir, Disk: cachekit.Disk(t, filepath.Join(dir, "cache"), 1<<30, nil, 0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return &format.Env{Store: st}
}

// TestOpenPicksFormat: the registry opens an RLDS directory as RLDS and a
// LeRobot root as LeRobot, each with the capabilities its format has.
func TestOpenPicksFormat(t *testing.T) {
	for _, tc := range []struct {
		dir, format string
		indexer     bool // lengths built by a pass (RLDS), not stored (LeRobot)
		fetcher     bool
	}{
		{"../../testdata/datasets/tiny_bridge/1.0.0", "RLDS", true, true},
		{"../../testdata/lerobot/lerobot_av1", "LeRobot", false, false},
	} {
		t.Run(tc.format, func(t *testing.T) {
			d, err := format.Open(context.Background(), "", local.New(filepath.FromSlash(tc.dir)), env(t))
			if err != nil {
				t.Fatal(err)
			}
			if got := format.NameOf(d); got != tc.format {
				t.Fatalf("opened as %q, want %q", got, tc.format)
			}
			_, indexer := d.(format.LengthIndexer)
			_, lengths := d.(format.LengthLoader)
			_, describer := d.(format.Describer)
			_, warmer := d.(format.Warmer)
			if indexer != tc.indexer || !lengths || !describer || !warmer || (format.FetcherOf(d) != nil) != tc.fetcher {
				t.Errorf("capabilities: indexer %v, lengths %v, describer %v, warmer %v, fetcher %v",
					indexer, lengths, describer, warmer, format.FetcherOf(d) != nil)
			}
		})
	}
}

// statDown is a remote source whose Stat fails, with an error that is
// neither fs.ErrNotExist nor retryable, while its objects can be read.
type statDown struct{ storage.Backend }

var errDown = errors.New("the source does not answer")

func (s statDown) Stat(context.Context, string) (storage.ObjectInfo, error) {
	return storage.ObjectInfo{}, errDown
}

func (s statDown) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	return s.Backend.Open(ctx, name, off, length)
}

// TestOutageOpensAsRLDS: a source that cannot say whether it holds
// meta/info.json is read as RLDS, as it was before LeRobot was read: RLDS's
// error is the one reported, or, here, the dataset opens as RLDS.
func TestOutageOpensAsRLDS(t *testing.T) {
	src := statDown{local.New(filepath.FromSlash("../../testdata/datasets/tiny_bridge/1.0.0"))}
	d, err := format.Open(context.Background(), "", src, env(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := format.NameOf(d); got != "RLDS" {
		t.Fatalf("opened as %q, want RLDS", got)
	}
}

// unavailable is a source whose retries gave up on every request.
type unavailable struct{ storage.Backend }

func (s unavailable) Stat(_ context.Context, name string) (storage.ObjectInfo, error) {
	return storage.ObjectInfo{}, &storage.UnavailableError{URI: s.Location(), Name: name, Attempts: 3, Err: errDown}
}

func (s unavailable) Open(_ context.Context, name string, _, _ int64) (io.ReadCloser, error) {
	return nil, &storage.UnavailableError{URI: s.Location(), Name: name, Attempts: 3, Err: errDown}
}

// TestUnavailableStopsTheProbes: a source that the LeRobot probe's
// retries gave up on fails the open with that error, naming the request
// (meta/info.json), without RLDS reading anything: an open waits out one
// retry budget, not one per format.
func TestUnavailableStopsTheProbes(t *testing.T) {
	src := &countingSource{Backend: unavailable{local.New(filepath.FromSlash("../../testdata/datasets/tiny_bridge/1.0.0"))}}
	_, err := format.Open(context.Background(), "", src, env(t))
	if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "meta/info.json") {
		t.Fatalf("open of a source that does not answer: %v; want storage.ErrUnavailable naming meta/info.json", err)
	}
	if src.requests != 1 {
		t.Fatalf("%d requests to a source that does not answer, want the probe's 1", src.requests)
	}
}

// countingSource counts the requests made of its backend.
type countingSource struct {
	storage.Backend
	requests int
}

func (s *countingSource) Stat(ctx context.Context, name string) (storage.ObjectInfo, error) {
	s.requests++
	return s.Backend.Stat(ctx, name)
}

func (s *countingSource) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	s.requests++
	return s.Backend.Open(ctx, name, off, length)
}

// remote is a source whose objects are not local files.
type remote struct{ storage.Backend }

// TestOfflineLeRobotWithoutDiskCache: a remote LeRobot source that warm
// recorded, opened offline by a store without a disk cache, is an error
// that says so (store.ErrNoDiskCache), not a panic; warming it is the
// same error.
func TestOfflineLeRobotWithoutDiskCache(t *testing.T) {
	src := remote{local.New(filepath.FromSlash("../../testdata/lerobot/lerobot_av1"))}
	dir := t.TempDir()
	online, err := store.NewStore(store.Options{IndexDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(online.Close)
	d, err := format.Open(context.Background(), "", src, &format.Env{Store: online})
	if err != nil {
		t.Fatal(err)
	}
	w, ok := d.(format.Warmer)
	if !ok {
		t.Fatal("a LeRobot dataset is not a Warmer")
	}
	if _, err := w.Warm(context.Background(), nil, nil); !errors.Is(err, store.ErrNoDiskCache) {
		t.Errorf("warm without a disk cache: %v; want store.ErrNoDiskCache", err)
	}
	rec := `{"files":{"meta/info.json":{"size":1,"version":"1"}}}`
	if err := online.SaveDerived(src, lerobotRecordName, "", lerobotRecordKey, []byte(rec)); err != nil {
		t.Fatal(err)
	}
	offline, err := store.NewStore(store.Options{IndexDir: dir, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(offline.Close)
	_, err = format.Open(context.Background(), "", src, &format.Env{Store: offline})
	if !errors.Is(err, store.ErrNoDiskCache) {
		t.Fatalf("offline open without a disk cache: %v; want store.ErrNoDiskCache", err)
	}
}
