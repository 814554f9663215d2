package loader

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestLeRobotOrderFree: a LeRobot batch's bytes do not depend on the order
// batches are built in, although a worker's decoder continues forward in a
// file when it can and seeks to a keyframe otherwise: batches built forward
// with one worker equal batches built backward with readahead.
func TestLeRobotOrderFree(t *testing.T) {
	requireVideo(t)
	av1, _ := filepath.Abs(filepath.Join(lerobotFixtures, "lerobot_av1"))
	h264, _ := filepath.Abs(filepath.Join(lerobotFixtures, "lerobot_h264"))
	yaml := "seed: 5\nbatch_size: 4\nimage_size: [24, 32]\npair_frames: all\nsamples_per_episode: 3\ndatasets:\n" +
		"  - source: " + av1 + "\n    name: top\n    split: train+val\n    image_key: observation.images.top\n    offset: 3\n" +
		"  - source: " + h264 + "\n    name: front\n    image_key: observation.images.front\n    offset: 3\n"
	forward := openYAMLPipeline(t, yaml, 0)
	defer forward.Close()
	backward := openYAMLPipeline(t, yaml, 3)
	defer backward.Close()
	n := forward.Mix.Train.NumBatches()
	want := make([][]byte, n)
	for i := range n {
		want[i] = getBatch(t, forward, i).frames
	}
	for i := n - 1; i >= 0; i-- {
		if got := getBatch(t, backward, i).frames; !bytes.Equal(got, want[i]) {
			t.Errorf("batch %d differs when built backward", i)
		}
	}
	if n < 5 {
		t.Errorf("only %d batches: the test needs several", n)
	}
}
