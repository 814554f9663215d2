package lerobot

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage/local"
)

// TestDamagedDatasets: each damaged copy of lerobot_av1 opens, the episodes
// the damage touches load as *episode.CorruptError naming it (what the
// loader substitutes), and every other episode loads.
func TestDamagedDatasets(t *testing.T) {
	ctx := context.Background()
	for _, v := range testkit.LeRobotVariants(t) {
		t.Run(v.Name, func(t *testing.T) {
			d, err := Open(ctx, "damaged", local.New(testkit.LeRobotDamaged(t, v.Name)), Options{})
			if err != nil {
				t.Fatalf("Open: %v (damage to data or video must not stop the dataset)", err)
			}
			for i := range int64(len(d.Episodes())) {
				key, _ := d.Key(i)
				_, err := d.Episode(ctx, key)
				switch {
				case slices.Contains(v.Episodes, i) && !errors.Is(err, episode.ErrCorrupt):
					t.Errorf("episode %d: %v, want corrupt data", i, err)
				case slices.Contains(v.Episodes, i) && !strings.Contains(err.Error(), v.Error):
					t.Errorf("episode %d: %q does not name %q", i, err, v.Error)
				case !slices.Contains(v.Episodes, i) && err != nil:
					t.Errorf("episode %d: %v; the damage does not touch it", i, err)
				case err != nil:
					t.Logf("episode %d: %v", i, err)
				}
			}
		})
	}
}
