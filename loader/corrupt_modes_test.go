package loader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/internal/testkit"
)

// TestBadRecordEveryMode: tiny_table with one record's CRC broken
// (testdata/corrupt/bad_crc, shard 0 record 2) is a counted substitution
// naming the record in stats.json in every sample mode and every
// samples_per_episode, all pairs and all steps included (where the length
// index, not the build, meets the record first), and with --strict an
// error wrapping episode.ErrCorrupt for the batches that hold it.
func TestBadRecordEveryMode(t *testing.T) {
	src := filepath.Join(testkit.Testdata(t), "corrupt/bad_crc")
	const bad = "table/train/0/2"
	spec := func() *config.StepSpec {
		return &config.StepSpec{
			Cameras: []config.CameraSlot{{Name: "primary", Size: [2]int{24, 32}, Deltas: config.Deltas{Steps: []int{-1, 0}}}},
			Action:  config.Deltas{Steps: []int{0, 1}},
		}
	}
	for _, tc := range []struct {
		name  string
		spe   int
		steps bool
	}{
		{"pairs, all pairs", 0, false},
		{"pairs, 1 per episode", 1, false},
		{"pairs, 4 per episode", 4, false},
		{"steps, every t", 0, true},
		{"steps, 3 per episode", 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := fmt.Sprintf("batch_size: 4\nimage_size: [24, 32]\nwindow_shards: 1\nsamples_per_episode: %d\nseed: 3\ndatasets:\n"+
				"  - name: table\n    source: %s\n    action_keys: [steps/action]\n", tc.spe, src)
			if !tc.steps {
				yaml += "    image_key: steps/observation/rgb\n    offset: 1\n"
			}
			open := func(strict bool) *Pipeline {
				var cfg *config.Config
				if tc.steps {
					cfg = stepConfig(t, yaml, spec())
				} else {
					var err error
					if cfg, err = config.Parse([]byte(yaml)); err != nil {
						t.Fatal(err)
					}
				}
				p, err := Open(context.Background(), Options{
					Config: cfg, CacheDir: t.TempDir(), Mem: 256 << 20, Disk: 1 << 30, Strict: strict,
					Workers: 2, Decoder: "go", Version: "test", Log: slog.New(slog.DiscardHandler),
				})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(p.Close)
				return p
			}

			p := open(false)
			for n := range p.Train.Len() {
				if _, err := p.BatchFiles(context.Background(), p.Train, n); err != nil {
					t.Fatalf("batch %d: %v", n, err)
				}
			}
			var st struct {
				Substitutions map[string]int64 `json:"substitutions"`
				BadEpisodes   []struct {
					Episode, Reason string
				} `json:"bad_episodes"`
			}
			if err := json.Unmarshal(p.Stats(), &st); err != nil {
				t.Fatal(err)
			}
			named := false
			for _, b := range st.BadEpisodes {
				named = named || b.Episode == bad && strings.Contains(strings.ToLower(b.Reason), "crc")
			}
			if !named || st.Substitutions["corrupt"] == 0 {
				t.Fatalf("stats.json: substitutions %v, bad episodes %+v; want %s counted with a CRC reason", st.Substitutions, st.BadEpisodes, bad)
			}

			strict := open(true)
			failed := 0
			for n := range strict.Train.Len() {
				_, err := strict.BatchFiles(context.Background(), strict.Train, n)
				switch {
				case err == nil:
				case errors.Is(err, episode.ErrCorrupt):
					failed++
				default:
					t.Fatalf("--strict batch %d: %v, want data or corrupt data", n, err)
				}
			}
			if failed == 0 {
				t.Fatalf("--strict served all %d batches", strict.Train.Len())
			}
		})
	}
}
