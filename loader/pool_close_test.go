package loader

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/oxefs/oxefs/batch"
	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/internal/testkit"
)

// TestCloseSkipsQueuedDecodes closes a pipeline while a large build has
// decode jobs queued on its one worker: the queued samples are skipped,
// not decoded, so shutdown waits for at most the sample being decoded.
func TestCloseSkipsQueuedDecodes(t *testing.T) {
	src := bridgeSource(t)
	cfg, err := config.Parse([]byte("batch_size: 2048\nimage_size: [32, 48]\nsamples_per_episode: 3\ndatasets:\n  - source: " + src +
		"\n    image_key: steps/observation/image\n    action_keys: [steps/action/world_vector]\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(context.Background(), Options{
		Config: cfg, CacheDir: t.TempDir(), Mem: 2 << 30, Disk: 1 << 30,
		Workers: 1, Version: "test", Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan result, 1)
	getAsync(context.Background(), p.Train, 0, out)
	waitUntil(t, "the build decodes", func() bool { return p.Builds.Samples[0].Load() > 0 })
	before := p.Builds.Samples[0].Load()
	p.Close()
	after := p.Builds.Samples[0].Load()
	if r := <-out; !errors.Is(r.err, batch.ErrClosed) {
		t.Fatalf("Get during Close: %v, want batch.ErrClosed", r.err)
	}
	if before >= 2048 {
		t.Skip("the build finished before Close: nothing to check")
	}
	// One worker: at most the sample it was decoding when Close began.
	if after-before > 1 {
		t.Fatalf("%d samples were decoded after Close began, want at most 1 (the one in progress)", after-before)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, time.Millisecond, what, cond)
}

// result is one Get's outcome, from getAsync.
type result struct {
	n   int64
	b   *batch.Batch
	err error
}

// getAsync runs Get on a goroutine; the result arrives on the channel.
func getAsync(ctx context.Context, s *batch.Scheduler, n int64, out chan<- result) {
	go func() {
		b, err := s.Get(ctx, n)
		out <- result{n, b, err}
	}()
}
