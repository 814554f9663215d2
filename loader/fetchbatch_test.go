package loader

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/episodes"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/internal/missing"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/retry"
)

// isFile reports whether a request path (JSON or XML API) is for a data
// or video file of the fixture.
func isFile(p string) bool {
	for _, dir := range []string{"data", "videos"} {
		if strings.Contains(p, "/"+dir+"/") || strings.Contains(p, "%2F"+dir+"%2F") {
			return true
		}
	}
	return false
}

// remoteLeRobotMix is a Mix of one remote LeRobot dataset (lerobot_av1
// behind a HangProxy, read with a short retry budget) whose episodes go
// through a RAM cache, as the pipeline builds it, reading the top camera.
func remoteLeRobotMix(t testing.TB, policy retry.Policy) (*Mix, *testkit.HangProxy, []episode.Key) {
	t.Helper()
	dir := filepath.Join(lerobotFixtures, "lerobot_av1")
	upstream := testkit.StartFakeGCS(t, testkit.ReadDirFiles(t, dir))
	proxy := testkit.NewHangProxy(t, upstream.URL(), isFile)
	st, err := OpenStorage(StorageOptions{CacheDir: t.TempDir(), Disk: 1 << 30, Log: testkit.TestLogger(t), Retry: policy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	data, err := format.Open(context.Background(), "lr", gcsSource(t, proxy.URL()), &format.Env{Store: st.Store})
	if err != nil {
		t.Fatal(err)
	}
	data = mustLeRobot(t, data)
	cache, err := episodes.New(64 << 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cache.Close)
	d := &Dataset{Config: config.DatasetConfig{Name: "lr", ImageKey: "observation.images.top"}, Data: data, Episodes: cache.Wrap(data)}
	if err := useCameras([]opened{{ds: d}}); err != nil {
		t.Fatal(err)
	}
	return &Mix{Datasets: []*Dataset{d}}, proxy, episodeKeys(t, data)
}

// TestFetchBatchDeadSource: a batch of a remote LeRobot dataset whose data
// and video files hang fails with storage.ErrUnavailable within one retry
// budget (MaxElapsed + StallTimeout; the test allows 3x), although its
// episodes lie in several files: they are all asked for at once, not one
// after another as decode workers would meet them.
func TestFetchBatchDeadSource(t *testing.T) {
	policy := retry.Policy{InitialBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, MaxElapsed: time.Second, StallTimeout: 300 * time.Millisecond}
	promise := policy.MaxElapsed + policy.StallTimeout
	m, proxy, keys := remoteLeRobotMix(t, policy)
	samples := make([]plan.Sample, len(keys))
	for i, k := range keys {
		samples[i] = plan.Sample{Dataset: 0, Episode: k}
	}
	proxy.Hang.Store(true)
	start := time.Now()
	err := m.fetchBatch(context.Background(), samples)
	took := time.Since(start)
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("fetchBatch with dead files: %v, want ErrUnavailable", err)
	}
	t.Logf("%d episodes: ErrUnavailable after %v (one budget: %v)", len(keys), took.Round(time.Millisecond), promise)
	if took > 3*promise {
		t.Fatalf("ErrUnavailable after %v for %d episodes; one budget is %v", took, len(keys), promise)
	}
}

// TestFetchBatchBringsVideo: once fetchBatch has run for a batch, its
// episodes' frames decode with the source dead: their rows, sample
// tables and video samples are all on this side. Damage is not
// fetchBatch's to report: it returns nil for an episode that cannot be
// loaded for any reason but the source.
func TestFetchBatchBringsVideo(t *testing.T) {
	requireVideo(t)
	policy := retry.Policy{InitialBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, MaxElapsed: time.Second, StallTimeout: 300 * time.Millisecond}
	m, proxy, keys := remoteLeRobotMix(t, policy)
	samples := []plan.Sample{{Dataset: 0, Episode: keys[0]}, {Dataset: 0, Episode: keys[len(keys)-1]}, {Dataset: 0, Episode: keys[0]}}
	ctx := context.Background()
	if err := m.fetchBatch(ctx, samples); err != nil {
		t.Fatal(err)
	}
	proxy.Hang.Store(true)
	dec, err := frames.NewDecoder(frames.DecoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, s := range samples {
		ep, err := m.Datasets[0].Episodes.Episode(ctx, s.Episode)
		if err != nil {
			t.Fatal(err)
		}
		v, err := ep.Feature("observation.images.top")
		if err != nil {
			t.Fatal(err)
		}
		idx := []int{0, ep.Steps() - 1}
		out := make([]byte, len(idx)*24*32*3)
		dctx, cancel := context.WithTimeout(ctx, 3*(policy.MaxElapsed+policy.StallTimeout))
		err = (&frames.Video{Key: "top", Steps: ep.Steps(), Stream: v.(episode.Video)}).Decode(dctx, dec, idx, frames.Slot{Buf: out, Frames: len(idx), H: 24, W: 32})
		cancel()
		if err != nil {
			t.Fatalf("episode %v with the source dead after fetchBatch: %v", s.Episode, err)
		}
	}
}

// BenchmarkFetchBatchWarm measures what fetchBatch costs a warm batch of a
// remote LeRobot dataset (episodes in the RAM cache, video samples in the
// disk cache), beside decoding the same batch's frames (two per sample at
// 24×32): the price of the per-read deadline on warm reads.
func BenchmarkFetchBatchWarm(b *testing.B) {
	if err := av.Available(); err != nil {
		missing.Skip(b, missing.AVCodec, err)
	}
	m, _, keys := remoteLeRobotMix(b, retry.Policy{})
	samples := make([]plan.Sample, 8)
	for i := range samples {
		samples[i] = plan.Sample{Dataset: 0, Episode: keys[i%len(keys)]}
	}
	ctx := context.Background()
	if err := m.fetchBatch(ctx, samples); err != nil {
		b.Fatal(err)
	}
	b.Run("fetch", func(b *testing.B) {
		for b.Loop() {
			if err := m.fetchBatch(ctx, samples); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		dec, err := frames.NewDecoder(frames.DecoderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer dec.Close()
		out := make([]byte, 2*24*32*3)
		for b.Loop() {
			for _, s := range samples {
				ep, err := m.Datasets[0].Episodes.Episode(ctx, s.Episode)
				if err != nil {
					b.Fatal(err)
				}
				v, err := ep.Feature("observation.images.top")
				if err != nil {
					b.Fatal(err)
				}
				idx := []int{0, ep.Steps() - 1}
				if err := (&frames.Video{Key: "top", Steps: ep.Steps(), Stream: v.(episode.Video)}).Decode(ctx, dec, idx, frames.Slot{Buf: out, Frames: 2, H: 24, W: 32}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
