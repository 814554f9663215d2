package lerobot

import (
	"context"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage/local"
)

// allEpisodes selects every split of d whole.
func allEpisodes(d *Dataset) []episode.Range {
	var rs []episode.Range
	for _, s := range d.Meta.Splits {
		rs = append(rs, episode.Range{Split: s.Name, From: 0, To: s.To - s.From})
	}
	return rs
}

// TestAuditClean: the fixtures lerobot wrote have no orphaned row and no
// frame missing from a video.
func TestAuditClean(t *testing.T) {
	for _, name := range []string{"lerobot_av1", "lerobot_h264", "lerobot_hevc"} {
		t.Run(name, func(t *testing.T) {
			d := openFixture(t, name)
			got, err := d.Audit(context.Background(), allEpisodes(d))
			if err != nil || len(got) != 0 {
				t.Fatalf("Audit: %+v, %v; want nothing", got, err)
			}
		})
	}
}

// TestAuditDamaged: each damage of a copy of lerobot_av1 is found, in the
// file and episode it is in, and only by the selections that hold it.
func TestAuditDamaged(t *testing.T) {
	type want struct {
		kind, file string
		episode    int64
		detail     string
	}
	tests := []struct {
		name  string
		dir   func(t *testing.T) string
		split string // the selection audited
		want  []want
	}{
		{"row of an episode not listed", func(t *testing.T) string { return testkit.LeRobotOrphanRow(t, 99) }, "train",
			[]want{{OrphanRow, testkit.LeRobotDataFile, -1, "row 37 carry episode_index 99, which meta/episodes does not list"}}},
		{"row of an episode of another data file", func(t *testing.T) string { return testkit.LeRobotOrphanRow(t, 4) }, "train",
			[]want{{OrphanRow, testkit.LeRobotDataFile, -1, "episode_index 4, an episode meta/episodes puts in data/chunk-000/file-001.parquet"}}},
		{"a row too many for its episode", func(t *testing.T) string { return testkit.LeRobotOrphanRow(t, 2) }, "train",
			[]want{{OrphanRow, testkit.LeRobotDataFile, -1, "episode_index 2, whose 16 rows"}}},
		{"a data file only train reads, audited for val", func(t *testing.T) string { return testkit.LeRobotOrphanRow(t, 99) }, "val", nil},
		{"frame dropped mid-video, the others keeping their times", func(t *testing.T) string { return testkit.LeRobotDroppedFrame(t, 15, false) }, "train",
			[]want{
				{VideoFrames, testkit.LeRobotTopVideo, -1, "has 59 frames, but meta/episodes puts 5 episodes of 60 rows in it"},
				{VideoFrames, testkit.LeRobotTopVideo, 1, "no frame at 1.5000s (1 frame missing: its frames jump from 1.4000s to 1.6000s, 1/fps is 0.1000s): episode 1 step 3"},
			}},
		{"frame dropped mid-video, the later ones moved up", func(t *testing.T) string { return testkit.LeRobotDroppedFrame(t, 15, true) }, "train",
			[]want{{VideoFrames, testkit.LeRobotTopVideo, -1, "has 59 frames, but meta/episodes puts 5 episodes of 60 rows in it"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Open(context.Background(), "lerobot_av1", local.New(tc.dir(t)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			s, _ := d.Meta.Split(tc.split)
			got, err := d.Audit(context.Background(), []episode.Range{{Split: tc.split, From: 0, To: s.To - s.From}})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d findings %+v, want %d: %+v", len(got), got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Kind != w.kind || g.File != w.file || g.Episode != w.episode || !strings.Contains(g.Detail, w.detail) {
					t.Errorf("finding %d: %+v, want %s in %s, episode %d, saying %q", i, g, w.kind, w.file, w.episode, w.detail)
				}
			}
		})
	}
}
