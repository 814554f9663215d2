package episodes_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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

// imageDigest hashes every step's image of ep.
func imageDigest(t *testing.T, ep episode.Episode) [32]byte {
	v, err := ep.Feature("steps/observation/image")
	if err != nil {
		t.Error(err)
		return [32]byte{}
	}
	h := sha256.New()
	for i := range ep.Steps() {
		h.Write(v.Bytes(i))
	}
	return [32]byte(h.Sum(nil))
}

// TestLentEpisodesRecycled: with a RAM cache too small to keep anything
// for long, readers that lend episodes, read them and give them back while
// others load over the recycled memory always read what the episode holds:
// memory is reused only once no one holds it. Episode's callers keep theirs
// for good.
func TestLentEpisodesRecycled(t *testing.T) {
	s := newStore(t)
	src := openBridge(t, s, "cam_a")
	var keys []episode.Key
	want := map[episode.Key][32]byte{}
	var pinned []episode.Episode // loaded without the cache, never given back
	for shard := range 2 {
		for rec := range 4 {
			k := episode.Key{Split: "train", Shard: shard, Record: rec}
			ep, err := src.Episode(context.Background(), k)
			if err != nil {
				continue
			}
			keys, want[k] = append(keys, k), imageDigest(t, ep)
			pinned = append(pinned, ep)
		}
	}
	if len(keys) < 4 {
		t.Fatalf("only %d fixture episodes", len(keys))
	}
	c := newCache(t, int64(pinned[0].Size())*2)
	d := c.Wrap(src)
	var lent atomic.Int64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 150 {
				k := keys[(i*7+g*3)%len(keys)]
				ep, hold, err := d.Lend(context.Background(), k)
				if err != nil {
					t.Error(err)
					return
				}
				if hold != nil {
					lent.Add(1)
				}
				if got := imageDigest(t, ep); got != want[k] {
					t.Errorf("episode %v read other bytes than it holds: its memory was reused while lent", k)
				}
				if g == 0 && i%10 == 0 {
					if _, err := d.Episode(context.Background(), k); err != nil { // kept for good
						t.Error(err)
					}
				}
				if hold != nil {
					hold.Release()
				}
			}
		})
	}
	wg.Wait()
	for i, ep := range pinned {
		if got := imageDigest(t, ep); got != want[keys[i]] {
			t.Fatalf("episode %v, never given back, was overwritten", keys[i])
		}
	}
	if lent.Load() == 0 {
		t.Fatal("no episode was lent with a hold: nothing was recycled")
	}
}
