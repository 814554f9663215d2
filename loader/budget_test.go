package loader

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/config"
)

// TestMemFloor: a --mem that cannot hold one batch is refused with the
// unit and the smallest --mem that works; that smallest --mem opens, and
// the shape named is the one the views serve.
func TestMemFloor(t *testing.T) {
	src := bridgeSource(t)
	for _, tc := range []struct {
		name, extra, valSplit string
		shape                 []int
		need                  string
	}{
		// 8×2×32×48×3 = 72 KiB a batch: --mem needs 2 batches, 8 with
		// a val view.
		{"val view", "", "\n    val_split: val", []int{8, 2, 32, 48, 3}, "576.0 KiB"},
		{"train only", "", "", []int{8, 2, 32, 48, 3}, "144.0 KiB"},
		{"BCFHW, all frames", "layout: BCFHW\npair_frames: all\n", "\n    offset: 2", []int{8, 3, 3, 32, 48}, "216.0 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte("batch_size: 8\nimage_size: [32, 48]\nsamples_per_episode: 3\n" + tc.extra +
				"datasets:\n  - source: " + src + "\n    image_key: steps/observation/image" + tc.valSplit +
				"\n    action_keys: [steps/action/world_vector]\n"))
			if err != nil {
				t.Fatal(err)
			}
			open := func(mem int64) (*Pipeline, error) {
				return Open(context.Background(), Options{
					Config: cfg, CacheDir: t.TempDir(), Mem: mem, Disk: 1 << 30,
					Workers: 1, Version: "test", Log: slog.New(slog.DiscardHandler),
				})
			}
			for _, mem := range []int64{0, 1, 8} {
				_, err := open(mem)
				if err == nil || !strings.Contains(err.Error(), "is too small") || !strings.Contains(err.Error(), "use --mem ≥ "+tc.need) {
					t.Fatalf("Open with --mem %d: %v, want too small, use --mem ≥ %s", mem, err, tc.need)
				}
			}
			// The floor is exact: one byte less is refused by the check,
			// and the floor itself passes every later check.
			need := int64(144 << 10)
			switch tc.name {
			case "val view":
				need = 576 << 10
			case "BCFHW, all frames":
				need = 216 << 10
			}
			if _, err := open(need - 1); err == nil || !strings.Contains(err.Error(), "is too small") {
				t.Fatalf("Open with --mem %d: %v, want too small", need-1, err)
			}
			p, err := open(need)
			if err != nil {
				t.Fatalf("Open with --mem %d (the floor): %v", need, err)
			}
			defer p.Close()
			if got := p.Train.Shape(); !slices.Equal(got, tc.shape) {
				t.Errorf("batches have shape %v, the check assumed %v", got, tc.shape)
			}
		})
	}
}
