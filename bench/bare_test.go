package bench_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/oxefs/oxefs/bench"
	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/internal/missing"
	"github.com/oxefs/oxefs/loader"
)

// TestBareDecode: the bare loop decodes exactly the video frames the
// plan's samples hold (two per sample here), and skips image cameras.
func TestBareDecode(t *testing.T) {
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	av1, err := filepath.Abs(filepath.Join("..", "testdata", "lerobot", "lerobot_av1"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("seed: 2\nbatch_size: 4\nimage_size: [24, 32]\ndatasets:\n  - source: " + av1 +
		"\n    name: top\n    image_key: observation.images.top\n    offset: 2\n  - source: " + av1 +
		"\n    name: side\n    image_key: observation.images.side\n    offset: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := loader.Open(context.Background(), loader.Options{
		Config: cfg, CacheDir: t.TempDir(), Mem: 256 << 20, Disk: 1 << 30,
		Workers: 2, Version: "test", Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m := p.Mix
	res, err := bench.BareDecode(context.Background(), m.Train, m.BareDatasets(), 0, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples != 6 || res.Frames != 12 {
		t.Errorf("%d samples, %d frames; want the 6 samples of the video camera in 3 batches of 4 (half each), 2 frames each", res.Samples, res.Frames)
	}
	if _, err := bench.BareDecode(context.Background(), m.Train, m.BareDatasets(), 0, 0, 2); err == nil {
		t.Error("no batches: want an error")
	}
}
