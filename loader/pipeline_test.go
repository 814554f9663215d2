package loader

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/internal/testkit"
)

// bridgeSource is the tiny_bridge fixture's directory.
func bridgeSource(t testing.TB) string {
	return filepath.Join(testkit.Testdata(t), "datasets/tiny_bridge/1.0.0")
}

func openTestPipeline(t *testing.T, readahead int) *Pipeline {
	t.Helper()
	return openYAMLPipeline(t, "batch_size: 8\nimage_size: [32, 48]\nsamples_per_episode: 3\ndatasets:\n  - source: "+bridgeSource(t)+
		"\n    image_key: steps/observation/image\n    val_split: val\n    action_keys: [steps/action/world_vector]\n", readahead)
}

// openYAMLPipeline opens a pipeline for a mix config with small budgets
// and two workers.
func openYAMLPipeline(t *testing.T, yaml string, readahead int) *Pipeline {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(context.Background(), Options{
		Config: cfg, CacheDir: t.TempDir(), Mem: 256 << 20, Disk: 1 << 30,
		Workers: 2, Readahead: readahead, Version: "test", Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPipelineCloseDuringReadahead closes while readahead builds are still
// queueing work: everything stops, nothing panics or leaks.
func TestPipelineCloseDuringReadahead(t *testing.T) {
	for range 5 {
		p := openTestPipeline(t, 8)
		b, err := p.Train.Get(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
		p.Close()
	}
}

func TestPipelineInfoAndStats(t *testing.T) {
	p := openTestPipeline(t, 2)
	defer p.Close()
	for n := range p.Train.Len() {
		b, err := p.Train.Get(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Frames()) != 8*2*32*48*3 {
			t.Fatalf("batch %d: %d bytes", n, len(b.Frames()))
		}
		b.Release()
	}
	var info struct {
		NumBatches int64 `json:"num_batches"`
		Frames     struct {
			Shape []int `json:"shape"`
		} `json:"frames"`
		Val *struct {
			NumBatches int64 `json:"num_batches"`
		} `json:"val"`
		ActionDim int `json:"action_dim"`
	}
	if err := json.Unmarshal(p.Info(), &info); err != nil {
		t.Fatal(err)
	}
	// 24 train episodes × 3 samples / 8 per batch.
	if info.NumBatches != 9 || len(info.Frames.Shape) != 5 || info.Frames.Shape[0] != 8 || info.Val == nil || info.ActionDim != 3 {
		t.Fatalf("info.json: %s", p.Info())
	}
	vb, err := p.Val.Get(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	vb.Release()
	var stats struct {
		Train struct {
			Requests, Builds int64
		} `json:"train"`
		Samples    map[string]int64 `json:"samples_per_dataset"`
		ValSamples map[string]int64 `json:"val_samples_per_dataset"`
		Memory     struct {
			RSS, Peak int64
		} `json:"memory"`
	}
	if err := json.Unmarshal(p.Stats(), &stats); err != nil {
		t.Fatal(err)
	}
	if stats.Train.Requests != 9 || stats.Train.Builds != 9 || stats.Samples["tiny_bridge"] != 72 || stats.ValSamples["tiny_bridge"] < 8 { // readahead may build more
		t.Fatalf("stats.json: %s", p.Stats())
	}
}

// BenchmarkBuild builds batches in-process from the fixture dataset (JPEG
// 96×128 frames resized to 32×48, B=8), every batch a fresh build:
// the decode pool, store and plan without FUSE.
func BenchmarkBuild(b *testing.B) {
	src := bridgeSource(b)
	cfg, err := config.Parse([]byte("batch_size: 8\nimage_size: [32, 48]\nsamples_per_episode: 3\nnum_batches: 1000000\ndatasets:\n  - source: " + src +
		"\n    image_key: steps/observation/image\n    action_keys: [steps/action/world_vector]\n"))
	if err != nil {
		b.Fatal(err)
	}
	p, err := Open(context.Background(), Options{
		Config: cfg, CacheDir: b.TempDir(), Mem: 256 << 20, Disk: 1 << 30,
		Workers: runtime.GOMAXPROCS(0), Readahead: 0, Version: "bench", Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	n := int64(0)
	for b.Loop() {
		bt, err := p.Train.Get(context.Background(), n)
		if err != nil {
			b.Fatal(err)
		}
		bt.Release()
		n++
	}
	b.ReportMetric(float64(n*8)/b.Elapsed().Seconds(), "samples/s")
}

// TestStatsCountLeRobotLoads: stats.json's ram_cache.episodes_loaded and
// bytes_read count the episodes of every format that the store loaded, not
// only RLDS ones: a mix of a LeRobot dataset shows its loads.
func TestStatsCountLeRobotLoads(t *testing.T) {
	p := openYAMLPipeline(t, "batch_size: 4\nimage_size: [32, 48]\nsamples_per_episode: 2\ndatasets:\n  - name: lr\n    source: "+
		filepath.Join(lerobotFixtures, "lerobot_av1")+"\n    image_key: observation.images.side\n    action_keys: [action]\n", 0)
	defer p.Close()
	b, err := p.Train.Get(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	var stats struct {
		RAM struct {
			EpisodesLoaded int64 `json:"episodes_loaded"`
			BytesRead      int64 `json:"bytes_read"`
		} `json:"ram_cache"`
	}
	if err := json.Unmarshal(p.Stats(), &stats); err != nil {
		t.Fatal(err)
	}
	if stats.RAM.EpisodesLoaded == 0 || stats.RAM.BytesRead == 0 {
		t.Fatalf("a batch of a LeRobot dataset built: episodes_loaded %d, bytes_read %d; want both > 0 (stats.json %s)",
			stats.RAM.EpisodesLoaded, stats.RAM.BytesRead, p.Stats())
	}
}

// TestPairsDecodeEachFrameOnce: pairs go through the batch's frame stage,
// so a frame that several pairs of a batch show (every t of a few short
// episodes, three frames each) is decoded once: stats.json's
// frames_decoded is the number of distinct (episode, frame) of each batch,
// counted from the batches' own metadata, summed; and fewer than the
// positions, so the batches do share frames.
func TestPairsDecodeEachFrameOnce(t *testing.T) {
	p := openYAMLPipeline(t, "batch_size: 8\nimage_size: [32, 48]\nsamples_per_episode: 0\npair_frames: all\ndatasets:\n  - source: "+bridgeSource(t)+
		"\n    image_key: steps/observation/image\n    offset: 2\n    action_keys: [steps/action/world_vector]\n", 0)
	defer p.Close()
	distinct, positions := 0, 0
	for n := range p.Train.Len() {
		files, err := p.BatchFiles(t.Context(), p.Train, n)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			EpisodeID    []string `json:"episode_id"`
			FrameIndices [][]int  `json:"frame_indices"`
		}
		if err := json.Unmarshal(files[".json"], &meta); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for i, id := range meta.EpisodeID {
			for _, f := range meta.FrameIndices[i] {
				seen[fmt.Sprint(id, "/", f)] = true
				positions++
			}
		}
		distinct += len(seen)
	}
	var st struct {
		FramesDecoded int64 `json:"frames_decoded"`
	}
	if err := json.Unmarshal(p.Stats(), &st); err != nil {
		t.Fatal(err)
	}
	if st.FramesDecoded != int64(distinct) {
		t.Fatalf("frames_decoded %d, want the batches' %d distinct frames (of %d positions)", st.FramesDecoded, distinct, positions)
	}
	if distinct >= positions {
		t.Fatalf("test design: %d distinct frames of %d positions: no batch shares a frame", distinct, positions)
	}
	t.Logf("%d frames decoded for %d positions", distinct, positions)
}
