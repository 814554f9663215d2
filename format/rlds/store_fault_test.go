package rlds

import (
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/store"

	"context"
	"errors"
	"path"
	"sync/atomic"
	"testing"
	"time"
)

// TestStoreSourceFaults puts a fault-injecting proxy between the real
// storage client and fake-gcs-server holding a fixture, and reads episodes
// through the store while the source fails: 503s and dropped connections are
// retried and the data is right; a source that never recovers gives a typed
// ErrUnavailable within the retry budget while cached shards keep serving;
// once the source recovers the same read succeeds.
func TestStoreSourceFaults(t *testing.T) {
	m := loadManifest(t)
	md := m.Datasets["tiny_bridge"]
	objects := fixtureObjects(t, md.Dir)
	upstream := testkit.StartFakeGCS(t, objects)

	var fail503, drops atomic.Int32
	var dead atomic.Bool
	proxy := testkit.NewFaultProxy(t, upstream.URL(), func(int) testkit.Fault {
		switch {
		case dead.Load():
			return testkit.Respond(503)
		case fail503.Add(-1) >= 0:
			return testkit.Respond(503)
		case drops.Add(-1) >= 0:
			return testkit.DropAfter(5000)
		}
		return testkit.Pass()
	})
	src := gcs.NewWithClient(testkit.NewGCSClient(t, proxy.URL()), testkit.GCSBucket, path.Join(testkit.GCSPrefix, md.Dir))
	// The budgets leave room for a loaded machine under -race (a healthy
	// request that sends nothing for a second there is not a stall); the
	// dead source below answers 503 at once, so only MaxElapsed bounds it.
	opts, fetch := stackOptions(t, t.TempDir(), 1<<30, retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		MaxElapsed: 3 * time.Second, StallTimeout: 10 * time.Second})
	s, err := store.NewStore(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	ds, err := Open(ctx, s, "", src)
	if err != nil {
		t.Fatal(err)
	}
	check := func(shard int) error {
		rec := md.Splits["train"].Shards[shard].Records[1]
		ep, err := ds.Episode(ctx, Ref{Split: "train", Shard: shard, Record: rec.Index})
		if err != nil {
			return err
		}
		checkEpisode(t, md.Name, ep, rec)
		return nil
	}

	fail503.Store(3)
	if err := check(0); err != nil {
		t.Fatalf("after three 503s: %v", err)
	}
	if r := fetch.Retries.Load(); r < 2 {
		t.Fatalf("%d retries counted after 503s", r)
	}

	// A whole-shard download (FetchShards; a single episode is fetched on
	// its own): the first two requests ask the shard's identity (the
	// version the dataset reads, then the fill's check of it: small JSON
	// answers that the drop does not cut); the download after them is cut
	// at 5000 bytes and must resume there.
	drops.Store(3)
	before := fetch.Retries.Load()
	if err := FetchShards(ctx, s, []ShardRef{{Dataset: ds, Split: "train", Shard: 1}}); err != nil {
		t.Fatalf("FetchShards after dropped connections: %v", err)
	}
	if err := check(1); err != nil {
		t.Fatalf("after dropped connections: %v", err)
	}
	if fetch.Retries.Load() == before {
		t.Fatal("a dropped connection was not retried")
	}
	resumed := false
	for _, r := range proxy.Requests() {
		resumed = resumed || r.Range == testkit.RangeFrom(5000)
	}
	if !resumed {
		t.Fatalf("no request resumed at byte 5000: %+v", proxy.Requests())
	}

	dead.Store(true)
	start := time.Now()
	err = check(2)
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("dead source: got %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("dead source took %v to fail with a 3s budget", d)
	}
	// Shards already in the disk cache keep serving while the source is down.
	// (Episodes are not cached in RAM here: check reads the shard again.)
	if err := check(0); err != nil {
		t.Fatalf("cached shard while the source is down: %v", err)
	}
	// A failure is remembered only for the memo window (MaxBackoff): the
	// source recovers, and the read after the window succeeds.
	dead.Store(false)
	time.Sleep(10 * time.Millisecond)
	if err := check(2); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
}
