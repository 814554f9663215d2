package loader

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestLeRobotDamageIsSubstituted builds a whole epoch of each damaged copy
// of lerobot_av1 (a truncated MP4, an unknown codec, a missing column, a
// missing row group, an episode past the end of its video, and garbled
// frame data): every batch builds, the damaged episodes' units are
// substituted and counted, and no batch holds a damaged episode.
func TestLeRobotDamageIsSubstituted(t *testing.T) {
	requireVideo(t)
	variants := testkit.LeRobotVariants(t)
	variants = append(variants, testkit.LeRobotVariant{Name: "garbled_frames", Episodes: []int64{5, 6}, Error: "bad video data"})
	for _, v := range variants {
		t.Run(v.Name, func(t *testing.T) {
			var dir string
			if v.Name == "garbled_frames" {
				dir = garbledFrames(t)
			} else {
				dir = testkit.LeRobotDamaged(t, v.Name)
			}
			p := openYAMLPipeline(t, "seed: 3\nbatch_size: 4\nimage_size: [24, 32]\nsamples_per_episode: 3\ndatasets:\n  - source: "+dir+
				"\n    name: lr\n    split: train+val\n    image_key: observation.images.top\n    offset: 1\n    action_keys: [action]\n    state_key: observation.state\n    language_key: task\n", 1)
			defer p.Close()
			for n := range p.Mix.Train.NumBatches() {
				b := getBatch(t, p, n)
				for _, id := range b.meta.EpisodeID {
					for _, e := range v.Episodes {
						if strings.HasSuffix(id, fmt.Sprintf("episode_%06d", e)) {
							t.Errorf("batch %d holds damaged episode %s", n, id)
						}
					}
				}
			}
			subs, bad := p.Builds.Substitutions()
			var total int64
			for _, c := range subs {
				total += c
			}
			if total == 0 || len(bad) == 0 {
				t.Fatalf("no substitution counted (%v, %v)", subs, bad)
			}
			var ids []string
			for _, b := range bad {
				ids = append(ids, b.Episode)
				if v.Error != "" && !strings.Contains(b.Reason, v.Error) {
					t.Errorf("%s: reason %q does not name %q", b.Episode, b.Reason, v.Error)
				}
			}
			for _, e := range v.Episodes {
				if !slices.ContainsFunc(ids, func(id string) bool { return strings.HasSuffix(id, fmt.Sprintf("episode_%06d", e)) }) {
					t.Errorf("episode %d is damaged but not listed as bad: %v", e, ids)
				}
			}
			t.Logf("substitutions %v; bad: %v", subs, bad)
		})
	}
}

// garbledFrames is a copy of lerobot_av1 whose second top-camera video has
// its sample data overwritten (the MP4's boxes intact): the frames fail in
// the decoder, not in the demuxer.
func garbledFrames(t *testing.T) string {
	dir := testkit.CopyDir(t, filepath.Join(lerobotFixtures, "lerobot_av1"))
	video := filepath.Join(dir, "videos/observation.images.top/chunk-000/file-001.mp4")
	b, err := os.ReadFile(video)
	if err != nil {
		t.Fatal(err)
	}
	// The boxes: ftyp, moov, mdat (LeRobot's files have the index first)
	// or ftyp, mdat, moov.
	mdat := strings.Index(string(b), "mdat")
	moov := strings.Index(string(b), "moov")
	end := len(b)
	if moov > mdat {
		end = moov - 4
	}
	if mdat < 0 || moov < 0 {
		t.Fatalf("%s: no mdat or moov", video)
	}
	for i := mdat + 4 + 16; i < end; i++ { // past the first sample's header
		b[i] = byte(i*131 + 7)
	}
	if err := os.WriteFile(video, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
