package episodes_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/episodes"
	"github.com/oxefs/oxefs/format"
	_ "github.com/oxefs/oxefs/format/formats" // registers RLDS for format.Open
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/store"
)

func openBridge(t *testing.T, s *store.Store, name string) format.Dataset {
	t.Helper()
	src := local.New(filepath.Join(testkit.Testdata(t), "datasets", "tiny_bridge", "1.0.0"))
	d, err := format.Open(context.Background(), name, src, &format.Env{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.NewStore(store.Options{IndexDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func newCache(t *testing.T, budget int64) *episodes.Cache {
	t.Helper()
	c, err := episodes.New(budget)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestSharedSourceNames opens one source as two datasets, as a mix with two
// cameras of one dataset does: each gets every episode under its own name
// and id, whichever loaded it first, and the cache holds one parsed copy.
func TestSharedSourceNames(t *testing.T) {
	s := newStore(t)
	c := newCache(t, 64<<20)
	a, b := openBridge(t, s, "cam_a"), openBridge(t, s, "cam_b")
	ca, cb := c.Wrap(a), c.Wrap(b)
	key := episode.Key{Split: "train", Shard: 1, Record: 2}
	for i, d := range []struct {
		name string
		ds   episode.Dataset
	}{{"cam_a", ca}, {"cam_b", cb}, {"cam_b", cb}, {"cam_a", ca}} {
		ep, err := d.ds.Episode(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if want := d.name + "/train/1/2"; ep.Dataset() != d.name || ep.ID() != want {
			t.Fatalf("read %d: dataset %s got episode %s of %s", i, d.name, ep.ID(), ep.Dataset())
		}
		if _, err := ep.Feature("steps/observation/image"); err != nil {
			t.Fatal(err)
		}
		c.Wait() // the first load is in the cache for the next read
	}
	if loaded := s.Stats.EpisodesLoaded.Load(); loaded != 1 {
		t.Fatalf("%d loads of one record, want 1 shared", loaded)
	}
	if hits, misses := c.Stats.Hits.Load(), c.Stats.Misses.Load(); hits != 3 || misses != 1 {
		t.Fatalf("%d hits, %d misses, want 3 and 1", hits, misses)
	}
}

// TestErrorsNameTheAskingDataset: a load's error names the dataset that
// asked, and a failed load is not cached.
func TestErrorsNameTheAskingDataset(t *testing.T) {
	s := newStore(t)
	c := newCache(t, 64<<20)
	d := c.Wrap(openBridge(t, s, "cam_a"))
	bad := episode.Key{Split: "train", Shard: 1, Record: 1 << 20}
	for range 2 {
		_, err := d.Episode(context.Background(), bad)
		if err == nil {
			t.Fatal("an out-of-range record loaded")
		}
		if want := "dataset cam_a"; !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not name %q", err, want)
		}
	}
	if misses := c.Stats.Misses.Load(); misses != 2 {
		t.Fatalf("%d misses, want 2: a failure must not be cached", misses)
	}
}

// TestClosed: after Close, reads fail with context.Canceled, never hang.
func TestClosed(t *testing.T) {
	s := newStore(t)
	c, err := episodes.New(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	d := c.Wrap(openBridge(t, s, "cam_a"))
	c.Close()
	if _, err := d.Episode(context.Background(), episode.Key{Split: "train"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after Close: %v, want context.Canceled", err)
	}
}

func TestBudget(t *testing.T) {
	if _, err := episodes.New(0); err == nil {
		t.Fatal("a zero budget was accepted")
	}
}
