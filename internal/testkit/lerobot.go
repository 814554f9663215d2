package testkit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// LeRobotVariant is one way of damaging the LeRobot fixture lerobot_av1:
// the episodes it makes unreadable and a word its error names.
type LeRobotVariant struct {
	Name     string
	Episodes []int64
	Error    string
}

// damagedVideo is the video file the Go-made variants damage, and the
// episodes stored in it.
const damagedVideo = "videos/observation.images.top/chunk-000/file-001.mp4"

var damagedVideoEpisodes = []int64{5, 6}

// truncatedEpisodes are the episodes of damagedVideo past the cut of
// truncated_mp4: the file has its sample table first (faststart), so the
// episode before the cut, 5, is whole.
var truncatedEpisodes = []int64{6}

// LeRobotVariants lists the damaged copies of lerobot_av1: those written by
// testdata/generate_lerobot.py with pyarrow (testdata/lerobot/corrupt), and
// two made here: a truncated MP4 and one whose codec is unknown.
func LeRobotVariants(t testing.TB) []LeRobotVariant {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Testdata(t), "lerobot", "corrupt", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index map[string]struct {
		Episodes []int64 `json:"episodes"`
		Error    string  `json:"error"`
	}
	if err := json.Unmarshal(b, &index); err != nil {
		t.Fatal(err)
	}
	out := []LeRobotVariant{
		{Name: "truncated_mp4", Episodes: truncatedEpisodes, Error: "truncated"},
		{Name: "unknown_codec", Episodes: damagedVideoEpisodes, Error: "xyz1"},
	}
	for _, name := range []string{"missing_column", "missing_row_group", "past_video_end"} {
		v, ok := index[name]
		if !ok {
			t.Fatalf("testdata/lerobot/corrupt/index.json has no %s", name)
		}
		out = append(out, LeRobotVariant{Name: name, Episodes: v.Episodes, Error: v.Error})
	}
	return out
}

// LeRobotDamaged returns a copy of lerobot_av1 damaged as the variant says.
func LeRobotDamaged(t testing.TB, variant string) string {
	t.Helper()
	root := filepath.Join(Testdata(t), "lerobot")
	dir := CopyDir(t, filepath.Join(root, "lerobot_av1"))
	video := filepath.Join(dir, damagedVideo)
	switch variant {
	case "truncated_mp4":
		b, err := os.ReadFile(video)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(video, b[:len(b)*6/10], 0o644); err != nil {
			t.Fatal(err)
		}
	case "unknown_codec":
		b, err := os.ReadFile(video)
		if err != nil {
			t.Fatal(err)
		}
		// The sample entry is the last "av01" (ftyp lists it as a brand).
		i := bytes.LastIndex(b, []byte("av01"))
		if i < 0 {
			t.Fatalf("%s: no av01 sample entry", damagedVideo)
		}
		copy(b[i:], "xyz1")
		if err := os.WriteFile(video, b, 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		over := filepath.Join(root, "corrupt", variant)
		if _, err := os.Stat(over); err != nil {
			t.Fatalf("no damaged files for %s: %v", variant, err)
		}
		if err := os.CopyFS(dir, os.DirFS(over)); err != nil {
			// CopyFS refuses to overwrite: copy file by file.
			err = filepath.WalkDir(over, func(p string, e os.DirEntry, err error) error {
				if err != nil || e.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(over, p)
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}
