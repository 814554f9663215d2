package loader

import (
	"context"
	"path/filepath"
	"testing"
)

// TestBareDecode: the bare loop decodes exactly the video frames the
// plan's samples hold (two per sample here), and skips image cameras.
func TestBareDecode(t *testing.T) {
	requireVideo(t)
	av1, _ := filepath.Abs(filepath.Join(lerobotFixtures, "lerobot_av1"))
	p := openYAMLPipeline(t, "seed: 2\nbatch_size: 4\nimage_size: [24, 32]\ndatasets:\n  - source: "+av1+
		"\n    name: top\n    image_key: observation.images.top\n    offset: 2\n  - source: "+av1+
		"\n    name: side\n    image_key: observation.images.side\n    offset: 2\n", 0)
	defer p.Close()
	res, err := p.BareDecode(context.Background(), 0, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Samples != 6 || res.Frames != 12 {
		t.Errorf("%d samples, %d frames; want the 6 samples of the video camera in 3 batches of 4 (half each), 2 frames each", res.Samples, res.Frames)
	}
	if _, err := p.BareDecode(context.Background(), 0, 0, 2); err == nil {
		t.Error("no batches: want an error")
	}
}
