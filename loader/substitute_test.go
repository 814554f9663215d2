package loader

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// tiny_bridge's train split: 24 episodes in 3 shards, of these lengths.
// Offset 13 needs 14 steps: only train/2/2 has them; offset 12 needs 13:
// train/0/1, 0/4, 0/6 and 2/2.
var bridgeLengths = [][]int{{8, 13, 4, 12, 13, 7, 13, 5}, {10, 7, 9, 6, 6, 10, 11, 9}, {12, 10, 14, 8, 7, 12, 4, 6}}

func sparsePipeline(t *testing.T, offset string, readahead int) *Pipeline {
	t.Helper()
	p := openYAMLPipeline(t, "batch_size: 8\nimage_size: [16, 16]\nwindow_shards: 1\ndatasets:\n  - source: "+bridgeSource(t)+
		"\n    image_key: steps/observation/image\n    offset: "+offset+"\n", readahead)
	t.Cleanup(p.Close)
	return p
}

type builtBatch struct {
	frames []byte
	meta   struct {
		EpisodeID []string `json:"episode_id"`
	}
}

func getBatch(t *testing.T, p *Pipeline, n int64) builtBatch {
	t.Helper()
	b, err := p.Train.Get(context.Background(), n)
	if err != nil {
		t.Fatalf("batch %d: %v", n, err)
	}
	defer b.Release()
	out := builtBatch{frames: bytes.Clone(b.Frames())}
	if err := json.Unmarshal(b.Meta(), &out.meta); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSparseLongEpisodes: when only one or a few episodes of a dataset are
// long enough for the offset, and whole windows have none, every batch
// still builds: each short episode is replaced by a long one from another
// window, the same one whatever order the batches are read in, and every
// substitution is counted.
func TestSparseLongEpisodes(t *testing.T) {
	for _, tc := range []struct {
		offset string
		long   []string // the episodes long enough
	}{
		{"13", []string{"tiny_bridge/train/2/2"}},
		{"[12, 13]", []string{"tiny_bridge/train/0/1", "tiny_bridge/train/0/4", "tiny_bridge/train/0/6", "tiny_bridge/train/2/2"}},
	} {
		t.Run("offset "+tc.offset, func(t *testing.T) {
			forward := sparsePipeline(t, tc.offset, 0)
			backward := sparsePipeline(t, tc.offset, 2)
			n := forward.Train.Len()
			if n != 3 {
				t.Fatalf("%d batches, want 24 units / 8", n)
			}
			got := make([]builtBatch, n)
			for i := range n {
				got[i] = getBatch(t, forward, i)
			}
			for i := n - 1; i >= 0; i-- {
				b := getBatch(t, backward, i)
				if !bytes.Equal(b.frames, got[i].frames) || fmt.Sprint(b.meta) != fmt.Sprint(got[i].meta) {
					t.Errorf("batch %d differs when batches are read in another order", i)
				}
			}
			used := map[string]int{}
			for _, b := range got {
				for _, id := range b.meta.EpisodeID {
					used[id]++
				}
			}
			for id := range used {
				if !strings.Contains(strings.Join(tc.long, " "), id) {
					t.Errorf("a sample of %s, which is too short", id)
				}
			}
			if len(tc.long) > 1 && len(used) < 2 {
				t.Errorf("every substitute is %v: replacements should spread over the long episodes", used)
			}
			var stats struct {
				Substitutions map[string]int64 `json:"substitutions"`
			}
			if err := json.Unmarshal(forward.Stats(), &stats); err != nil {
				t.Fatal(err)
			}
			if short := stats.Substitutions["short_episode"]; short < int64(24-len(tc.long)) {
				t.Errorf("%d short-episode substitutions counted, want at least %d", short, 24-len(tc.long))
			}
			t.Logf("samples per episode: %v; substitutions %v", used, stats.Substitutions)
		})
	}
}
