package rlds

import (
	"github.com/oxefs/oxefs/storage/local"

	"context"
	"path/filepath"
	"testing"
)

// TestEpisodeSharedSourceNames opens one source as two datasets, as a mix
// with two cameras of one dataset does: each gets every episode under its
// own name and id, whichever loaded it first, and the RAM cache holds one
// parsed copy.
func TestEpisodeSharedSourceNames(t *testing.T) {
	s := newTestStore(t, "")
	ctx := context.Background()
	src := local.New(filepath.Join(fixtureDir, "datasets", "tiny_bridge", "1.0.0"))
	a, err := s.Open(ctx, "cam_a", src)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Open(ctx, "cam_b", src)
	if err != nil {
		t.Fatal(err)
	}
	ref := Ref{Split: "train", Shard: 1, Record: 2}
	for i, d := range []*Dataset{a, b, b, a} {
		ep, err := d.Episode(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if ep.Dataset() != d.Name || ep.ID() != d.EpisodeID(ref) {
			t.Fatalf("read %d: dataset %s got episode %s of %s", i, d.Name, ep.ID(), ep.Dataset())
		}
		if _, err := ep.Feature("steps/observation/image"); err != nil {
			t.Fatal(err)
		}
		s.ram.Wait() // the first load is in the cache for the next read
	}
	if loaded := s.Stats.EpisodesLoaded.Load(); loaded != 1 {
		t.Fatalf("%d loads of one record, want 1 shared", loaded)
	}
}
