package e2e

import (
	"encoding/binary"
	"fmt"
	"image/png"
	"net/http"
	"path/filepath"
	"testing"
)

// TestViewDecodesCompressedFrames: the page of a decode: gpu mount shows a
// frame served as JPEG bytes decoded, resized and augmented as the batch
// records, the very pixels a decode: exact mount of the same mix serves,
// and a frame served as pixels as it is.
func TestViewDecodesCompressedFrames(t *testing.T) {
	bridge, _ := filepath.Abs("testdata/datasets/tiny_bridge/1.0.0")
	lr, _ := filepath.Abs("testdata/lerobot/lerobot_av1")
	mix := func(decode string) string {
		return writeMixText(t, fmt.Sprintf(`seed: 5
batch_size: 6
num_batches: 2
decode: %s
sample:
  cameras:
    primary: {size: [48, 64], steps: [-1, 0]}
augment:
  random_resized_crop: {scale: [0.6, 0.9], ratio: [0.8, 1.25]}
  rotate: 10
  brightness: 0.2
  saturation: 0.3
  hue: 0.05
datasets:
  - name: bridge
    source: %s
    cameras: {primary: steps/observation/image}
  - name: lr
    source: %s
    split: train
    cameras: {primary: observation.images.side}
`, decode, bridge, lr))
	}
	exact := filepath.Join(t.TempDir(), "exact")
	gpu := filepath.Join(t.TempDir(), "gpu")
	startMount(t, exact, nil, "--config", mix("exact"), "--cache-dir", t.TempDir())
	d := startMount(t, gpu, nil, "--config", mix("gpu"), "--cache-dir", t.TempDir(), "--view", "127.0.0.1:0")
	url := viewURL(t, d.stderr())

	const B, T, H, W = 6, 2, 48, 64
	compressed, pixels := 0, 0
	for n := range 2 {
		want := npyData(t, batchFile(t, exact, n, "observation.images.primary.npy"))
		sizes := npyData(t, batchFile(t, gpu, n, "observation.images.primary.jpeg_size.npy"))
		for i := range B {
			for k := range T {
				if binary.LittleEndian.Uint32(sizes[4*(i*T+k):]) > 0 {
					compressed++
				} else {
					pixels++
				}
				resp, err := http.Get(fmt.Sprintf("%sapi/frame?n=%d&sample=%d&slot=primary&step=%d", url, n, i, k))
				if err != nil {
					t.Fatal(err)
				}
				img, err := png.Decode(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatalf("batch %d sample %d step %d: %v", n, i, k, err)
				}
				frame := want[(i*T+k)*H*W*3:]
				for y := range H {
					for x := range W {
						r, g, b, _ := img.At(x, y).RGBA()
						o := (y*W + x) * 3
						if byte(r>>8) != frame[o] || byte(g>>8) != frame[o+1] || byte(b>>8) != frame[o+2] {
							t.Fatalf("batch %d sample %d step %d: pixel (%d, %d) is %d %d %d on the page, %v from decode: exact",
								n, i, k, x, y, r>>8, g>>8, b>>8, frame[o:o+3])
						}
					}
				}
			}
		}
	}
	if compressed == 0 || pixels == 0 {
		t.Fatalf("%d compressed frames and %d served as pixels: the mix should have both", compressed, pixels)
	}
	t.Logf("%d compressed frames decoded by the page, %d pixel frames", compressed, pixels)
}
