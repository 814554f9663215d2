package pairs

import (
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/storage/local"

	"context"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/oxefs/oxefs/format/rlds"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/store"
)

// The fixtures, written by tensorflow_datasets itself (testdata/generate.py).
const fixtureDir = "../testdata"

func newStore(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.NewStore(store.Options{IndexDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// openDir opens a TFDS dataset directory; name "" keeps the dataset's own.
func openDir(t testing.TB, s *store.Store, name, dir string) *rlds.Dataset {
	t.Helper()
	ds, err := rlds.Open(context.Background(), s, name, local.New(dir))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func openFixture(t testing.TB, s *store.Store, dataset string) *rlds.Dataset {
	return openDir(t, s, "", filepath.Join(fixtureDir, "datasets", dataset, "1.0.0"))
}

func loadEpisode(t testing.TB, ds *rlds.Dataset, ref rlds.Ref) episode.Episode {
	t.Helper()
	ep, err := ds.Episode(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

var shardNumber = regexp.MustCompile(`-(\d+)-of-\d+$`)

// shardIndex reads the shard number out of a TFDS shard file name.
func shardIndex(t testing.TB, file string) int {
	t.Helper()
	m := shardNumber.FindStringSubmatch(file)
	if m == nil {
		t.Fatalf("shard file name %q", file)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// testWorker returns a worker whose decoder is closed at the end of the
// test. When libjpeg-turbo is asked for and cannot be had, the test is
// skipped with a message saying so.
func testWorker(t testing.TB, choice string) *Worker {
	t.Helper()
	return testWorkerWith(t, frames.DecoderOptions{JPEG: choice})
}

func testWorkerWith(t testing.TB, opts frames.DecoderOptions) *Worker {
	t.Helper()
	d, err := frames.NewDecoder(opts)
	if err != nil {
		t.Skipf("SKIPPING the libjpeg-turbo half of this test: %v. It needs a cgo build and libturbojpeg.so.0 (Debian/Ubuntu: apt-get install libturbojpeg0).", err)
	}
	w := NewWorker(d)
	t.Cleanup(w.Close)
	return w
}
