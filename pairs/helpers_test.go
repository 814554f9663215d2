package pairs

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	_ "github.com/oxefs/oxefs/format/formats" // registers the formats format.Open probes
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/internal/missing"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
	"github.com/oxefs/oxefs/storage/local"
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

// openFixture opens a fixture dataset through the format registry, as the
// loader opens datasets, under the dataset's own name.
func openFixture(t testing.TB, s *store.Store, dataset string) format.Dataset {
	t.Helper()
	dir := filepath.Join(fixtureDir, "datasets", dataset, "1.0.0")
	ds, err := format.Open(context.Background(), "", local.New(dir), &format.Env{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// fixtureKey returns the key of record rec of shard shard of split, after
// checking through the dataset's neutral description (its Info) that the
// dataset has that episode.
func fixtureKey(t testing.TB, ds episode.Dataset, split string, shard, rec int) episode.Key {
	t.Helper()
	sp, ok := ds.Info().Split(split)
	if !ok {
		t.Fatalf("%s has no split %q (splits %v)", ds.Info().Name, split, ds.Info().SplitNames())
	}
	if shard < 0 || shard >= len(sp.ShardEpisodes) {
		t.Fatalf("%s split %s has %d shards, no shard %d", ds.Info().Name, split, len(sp.ShardEpisodes), shard)
	}
	if rec < 0 || int64(rec) >= sp.ShardEpisodes[shard] {
		t.Fatalf("%s split %s shard %d has %d episodes, no record %d", ds.Info().Name, split, shard, sp.ShardEpisodes[shard], rec)
	}
	return episode.Key{Split: split, Shard: shard, Record: rec}
}

func loadEpisode(t testing.TB, ds episode.Dataset, key episode.Key) episode.Episode {
	t.Helper()
	ep, err := ds.Episode(context.Background(), key)
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
func testWorker(t testing.TB, choice string) *testWorkerT {
	t.Helper()
	return testWorkerWith(t, frames.DecoderOptions{JPEG: choice})
}

func testWorkerWith(t testing.TB, opts frames.DecoderOptions) *testWorkerT {
	t.Helper()
	w, err := newTestWorker(opts)
	if err != nil {
		missing.Skip(t, missing.TurboJPEG, err)
	}
	t.Cleanup(w.Close)
	return w
}

// testWorkerT is a decode worker as the builder's pool makes one: the
// kind's scratch, the frame stage's worker, and a stage of its own, so
// that each build is a batch of one sample.
type testWorkerT struct {
	*Worker
	fw    *sample.FrameWorker
	cpu   *sample.CPU
	stage *sample.Stage
	one   [1]plan.Sample // the batch's planned samples
}

func newTestWorker(opts frames.DecoderOptions) (*testWorkerT, error) {
	cpu, err := sample.NewCPU(opts)
	if err != nil {
		return nil, err
	}
	return &testWorkerT{Worker: NewWorker(), fw: sample.NewFrameWorker(cpu), cpu: cpu, stage: sample.NewStage()}, nil
}

// Decoder is the worker's frames.Decoder.
func (w *testWorkerT) Decoder() *frames.Decoder { return w.cpu.Frames() }

// Footprint is the worker's buffers, its decoder's included.
func (w *testWorkerT) Footprint() int { return w.Worker.Footprint() + w.fw.Footprint() }

// Close closes its decoder.
func (w *testWorkerT) Close() { w.fw.Close() }

// build builds sample s of ep with a as the only sample of a batch.
func (w *testWorkerT) build(a *Assembler, ctx context.Context, s plan.Sample, ep episode.Episode, dst []byte, m *Meta) error {
	w.stage.Reset(0, w.one[:], sample.Identity{})
	return a.Build(ctx, w.Worker, w.stage.For(w.fw, 0), s, ep, dst, nil, m)
}
