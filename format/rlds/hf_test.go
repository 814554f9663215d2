package rlds

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit/fakehub"
	"github.com/oxefs/oxefs/storage/hf"
)

// TestColdStartFromHub: an RLDS dataset in a folder of a Hub repository
// (its shards LFS files, read through the redirect to the storage host)
// opens from its metadata alone, indexes each shard by header hops, one
// ranged read per record, and fetches a batch's episodes as their own byte
// ranges: fewer bytes than their shards, no shard read whole, every
// episode equal to the manifest's. The requests and bytes of each phase
// are logged.
func TestColdStartFromHub(t *testing.T) {
	md := loadManifest(t).Datasets["tiny_bridge"]
	files := map[string][]byte{}
	shardNames := map[string]bool{}
	var shardBytes int64
	for name, b := range fixtureObjects(t, md.Dir) {
		files["1.0.0/"+path.Base(name)] = b
	}
	// The storage host serves an LFS file at /lfs/<its SHA-256>.
	shardPaths := map[string]bool{}
	for _, sh := range md.Splits["train"].Shards {
		shardNames[sh.File] = true
		b := files["1.0.0/"+sh.File]
		shardBytes += int64(len(b))
		sum := sha256.Sum256(b)
		shardPaths["/lfs/"+hex.EncodeToString(sum[:])] = true
	}
	hub := fakehub.New(t, fakehub.Options{})
	hub.Commit("oxe/tiny_bridge", "main", files)
	src, err := hf.New(hf.Config{Endpoint: hub.URL(), Repo: "oxe/tiny_bridge", Prefix: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	s := newTestStore(t, t.TempDir())
	ctx := context.Background()
	ds, err := Open(ctx, s, "", src)
	if err != nil {
		t.Fatal(err)
	}
	// phase logs the requests from the from-th on; with shards, each read
	// of a shard must be of a bounded byte range. (The fake Hub logs a
	// request once its handler returns, so a metadata read of the open
	// can be logged after the open: reads of other files are not shards'.)
	phase := func(name string, from int, shards bool) int {
		reqs := hub.Requests()
		var hubs, stores, bytes int64
		for _, r := range reqs[from:] {
			if r.Host == "hub" {
				hubs++
			} else {
				stores++
			}
			bytes += r.Bytes
			if shards && r.Method == "GET" && r.Host == "storage" && shardPaths[r.Path] && (r.Range == "" || strings.HasSuffix(r.Range, "-")) {
				t.Errorf("%s: %s %s read to the end (Range %q)", name, r.Method, r.Path, r.Range)
			}
		}
		t.Logf("%s: %d requests to the hub, %d to the storage host, %d bytes", name, hubs, stores, bytes)
		return len(reqs)
	}
	opened := phase("open (metadata)", 0, false)

	var refs []EpisodeRef
	for i := range md.Splits["train"].Shards {
		refs = append(refs, EpisodeRef{ds, Ref{Split: "train", Shard: i, Record: 0}})
	}
	if err := FetchEpisodes(ctx, s, refs); err != nil {
		t.Fatal(err)
	}
	var fetched int64
	for _, r := range hub.Requests()[opened:] {
		fetched += r.Bytes
	}
	phase("index and fetch one episode per train shard", opened, true)
	if got := s.Disk().Stats.RangesFetched.Load(); got != int64(len(refs)) {
		t.Errorf("%d records fetched for %d episodes", got, len(refs))
	}
	if fetched >= shardBytes {
		t.Errorf("%d bytes moved for %d episodes; their whole shards are %d", fetched, len(refs), shardBytes)
	}
	for i, sh := range md.Splits["train"].Shards {
		ep, err := ds.Episode(ctx, Ref{Split: "train", Shard: i, Record: sh.Records[0].Index})
		if err != nil {
			t.Fatal(err)
		}
		checkEpisode(t, md.Name, ep, sh.Records[0])
		if wholeCached(t, ds, sh.File) {
			t.Errorf("%s: the whole shard is in the disk cache", sh.File)
		}
	}
}
