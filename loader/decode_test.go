package loader

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestDecodeFast builds the same batches of the three fixture datasets
// (frames of 96×128, 40×72 and 120×160, written by TFDS) with `decode:
// exact` and `decode: fast`: the metadata are identical, the frames close
// (PSNR above a floor, logged per size), fast twice gives the same bytes,
// and info.json names the mode. At 24×32, tiny_bridge decodes at 1/4
// straight into the slot, tiny_kuka at 1/4 then resized, tiny_table at
// full size.
func TestDecodeFast(t *testing.T) {
	data := testkit.Testdata(t)
	mix := func(size, mode string) string {
		return fmt.Sprintf(`seed: 5
batch_size: 16
image_size: %s
decode: %s
num_batches: 6
datasets:
  - source: %s
    image_key: steps/observation/image
    offset: 2
    action_keys: [steps/action/world_vector]
  - source: %s
    image_key: steps/observation/rgb
    offset: 2
    action_keys: [steps/action]
  - source: %s
    image_key: steps/observation/image
    offset: 2
    action_keys: [steps/action]
`, size, mode, filepath.Join(data, "datasets/tiny_bridge/1.0.0"), filepath.Join(data, "datasets/tiny_table/1.0.0"), filepath.Join(data, "datasets/tiny_kuka/1.0.0"))
	}
	for _, tc := range []struct {
		size  string
		floor float64 // dB
	}{{"[24, 32]", 34}, {"[64, 64]", 44}, {"[160, 200]", 46}} {
		t.Run(tc.size, func(t *testing.T) {
			build := func(mode string) (frames, meta [][]byte) {
				p := openYAMLPipeline(t, mix(tc.size, mode), 0)
				defer p.Close()
				var info struct {
					Frames struct{ Decode string } `json:"frames"`
				}
				if err := json.Unmarshal(p.Info(), &info); err != nil || info.Frames.Decode != mode {
					t.Fatalf("info.json frames.decode = %q (%v), want %q", info.Frames.Decode, err, mode)
				}
				for n := range int64(6) {
					b, err := p.Train.Get(context.Background(), n)
					if err != nil {
						t.Fatal(err)
					}
					frames = append(frames, bytes.Clone(b.Frames()))
					meta = append(meta, bytes.Clone(b.Meta()))
					b.Release()
				}
				return frames, meta
			}
			exact, exactMeta := build("exact")
			fast, fastMeta := build("fast")
			again, _ := build("fast")
			var all, allFast []byte
			for n := range exact {
				if !bytes.Equal(exactMeta[n], fastMeta[n]) {
					t.Fatalf("batch %d: metadata differ between exact and fast", n)
				}
				if !bytes.Equal(fast[n], again[n]) {
					t.Fatalf("batch %d: fast frames differ from one build to the next", n)
				}
				all, allFast = append(all, exact[n]...), append(allFast, fast[n]...)
			}
			psnr := testkit.PSNR(all, allFast)
			t.Logf("image_size %s: fast vs exact over %d batches: PSNR %.1f dB, %v", tc.size, len(exact), psnr, testkit.Diff(all, allFast))
			if psnr < tc.floor || math.IsInf(psnr, 1) {
				t.Errorf("PSNR %.1f dB: want ≥ %.0f and not identical (fast must differ somewhere)", psnr, tc.floor)
			}
		})
	}
}
