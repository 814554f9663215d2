package rlds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format/rlds/tfrecord"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/store"
)

// hopFixture is the tiny_bridge fixture served by fake-gcs-server behind a
// FaultProxy whose plan a test may swap.
type hopFixture struct {
	md      manifestDataset
	objects map[string][]byte // as uploaded, by name relative to the dataset
	srv     *fakestorage.Server
	proxy   *testkit.FaultProxy
	plan    atomic.Pointer[func(off int64, nth int) testkit.Fault]
	src     *gcs.Backend
}

func newHopFixture(t *testing.T, edit func(objects map[string][]byte)) *hopFixture {
	t.Helper()
	f := &hopFixture{md: loadManifest(t).Datasets["tiny_bridge"], objects: map[string][]byte{}}
	for name, b := range fixtureObjects(t, f.md.Dir) {
		f.objects[path.Base(name)] = b
	}
	if edit != nil {
		edit(f.objects)
	}
	upload := map[string][]byte{}
	for name, b := range f.objects {
		upload[path.Join(f.md.Dir, name)] = b
	}
	f.srv = testkit.StartFakeGCS(t, upload)
	passAll := func(int64, int) testkit.Fault { return testkit.Pass() }
	f.plan.Store(&passAll)
	f.proxy = testkit.NewOffsetFaultProxy(t, f.srv.URL(), func(off int64, nth int) testkit.Fault { return (*f.plan.Load())(off, nth) })
	f.src = gcs.NewWithClient(testkit.NewGCSClient(t, f.proxy.URL()), testkit.GCSBucket, path.Join(testkit.GCSPrefix, f.md.Dir))
	return f
}

// open opens the fixture in a new store over cacheDir.
func (f *hopFixture) open(t *testing.T, cacheDir string) (*store.Store, *Dataset) {
	t.Helper()
	s := newTestStore(t, cacheDir)
	ds, err := Open(context.Background(), s, "", f.src)
	if err != nil {
		t.Fatal(err)
	}
	return s, ds
}

// rewrite uploads data as the named shard: a new generation.
func (f *hopFixture) rewrite(name string, data []byte) {
	f.srv.CreateObject(fakestorage.Object{
		ObjectAttrs: fakestorage.ObjectAttrs{BucketName: testkit.GCSBucket, Name: path.Join(testkit.GCSPrefix, f.md.Dir, name)},
		Content:     data,
	})
}

// shardRequests counts the proxy's requests for the named object: reads
// (with a Range or without) and metadata requests alike.
func (f *hopFixture) shardRequests(name string) (reads, stats int) {
	for _, r := range f.proxy.Requests() {
		if !strings.HasSuffix(r.Path, name) {
			continue
		}
		if strings.Contains(r.Path, "/storage/v1/") {
			stats++
		} else {
			reads++
		}
	}
	return reads, stats
}

func localSpans(t *testing.T, data []byte) ([]tfrecord.Span, error) {
	t.Helper()
	return tfrecord.Index(bytes.NewReader(data), int64(len(data)))
}

// TestHopIndexEqualsLocal: indexing every remote shard by header hops gives
// the spans a local index of the same bytes gives, with one header read
// per record, and every episode then reads, fetched on its own, without
// the whole shard ever entering the disk cache.
func TestHopIndexEqualsLocal(t *testing.T) {
	f := newHopFixture(t, nil)
	s, ds := f.open(t, t.TempDir())
	ctx := context.Background()
	var records int64
	for split, sp := range f.md.Splits {
		for i, sh := range sp.Shards {
			want, err := localSpans(t, f.objects[sh.File])
			if err != nil {
				t.Fatal(err)
			}
			before := s.Stats.Hops.Load()
			hi, err := ds.remoteIndex(ctx, sh.File)
			if err != nil {
				t.Fatalf("%s: %v", sh.File, err)
			}
			if hi.broken != nil || fmt.Sprint(hi.spans) != fmt.Sprint(want) {
				t.Fatalf("%s: hop index %v (broken %v), local index %v", sh.File, hi.spans, hi.broken, want)
			}
			if hops := s.Stats.Hops.Load() - before; hops != int64(len(want)) {
				t.Errorf("%s: %d header reads for %d records", sh.File, hops, len(want))
			}
			for _, rec := range sh.Records {
				ep, err := ds.Episode(ctx, Ref{Split: split, Shard: i, Record: rec.Index})
				if err != nil {
					t.Fatal(err)
				}
				checkEpisode(t, f.md.Name, ep, rec)
				records++
			}
			if wholeCached(t, ds, sh.File) {
				t.Errorf("%s: the whole shard is in the disk cache", sh.File)
			}
		}
	}
	if got := s.Disk().Stats.RangesFetched.Load(); got != records {
		t.Errorf("%d records fetched on their own, want %d", got, records)
	}
}

// corruptHeader flips a bit of the length CRC of record r's header.
func corruptHeader(t *testing.T, data []byte, r int) []byte {
	t.Helper()
	spans, err := localSpans(t, data)
	if err != nil || len(spans) <= r {
		t.Fatalf("shard has %d records (%v); want more than %d", len(spans), err, r)
	}
	out := bytes.Clone(data)
	out[spans[r].Offset+8] ^= 0x01
	return out
}

// TestHopIndexHeaderCRC: a header whose CRC does not match stops the hops
// there: the records before it read, the others fail with the same
// *episode.CorruptError (and text) as the same bytes read from a local directory.
// The same bytes twice are looked at once more in the whole shard, fetched
// and checked against the source's CRC32C (which holds: the damage is the
// source's), and the verdict stands; the records are then read from that
// copy, and no record at or after the break is fetched on its own.
func TestHopIndexHeaderCRC(t *testing.T) {
	const bad = 2
	var shard string
	f := newHopFixture(t, func(objects map[string][]byte) {
		shard = loadManifest(t).Datasets["tiny_bridge"].Splits["train"].Shards[0].File
		objects[shard] = corruptHeader(t, objects[shard], bad)
	})
	dir := t.TempDir()
	for name, b := range f.objects {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	_, remote := f.open(t, t.TempDir())
	localDS, err := Open(ctx, newTestStore(t, ""), "", local.New(dir))
	if err != nil {
		t.Fatal(err)
	}
	n := len(f.md.Splits["train"].Shards[0].Records)
	for r := range n {
		ref := Ref{Split: "train", Shard: 0, Record: r}
		_, rerr := remote.Episode(ctx, ref)
		_, lerr := localDS.Episode(ctx, ref)
		if r < bad {
			if rerr != nil || lerr != nil {
				t.Fatalf("record %d before the break: remote %v, local %v", r, rerr, lerr)
			}
			continue
		}
		var ce *episode.CorruptError
		if !errors.As(rerr, &ce) || ce.Record != r || !errors.Is(rerr, tfrecord.ErrCorrupt) {
			t.Fatalf("record %d after the break: %v, want a *episode.CorruptError for it", r, rerr)
		}
		if lerr == nil || rerr.Error() != lerr.Error() {
			t.Fatalf("record %d: remote error\n  %v\nlocal error\n  %v", r, rerr, lerr)
		}
	}
	t.Logf("after the break: %v", func() error { _, err := remote.Episode(ctx, Ref{Split: "train", Shard: 0, Record: bad}); return err }())
	if got := remote.store.Disk().Stats.RangesFetched.Load(); got > bad {
		t.Errorf("%d records fetched on their own, want at most the %d before the break", got, bad)
	}
	if got := remote.store.Disk().Stats.Verified.Load(); got != 1 {
		t.Errorf("%d whole shards checked against their checksum, want the broken one, once", got)
	}
}

// TestRangedFetchResumes: the first request for a record's byte range is
// cut mid-body; the read resumes where the bytes stopped, pinned to the same
// generation, and serves the right episode.
func TestRangedFetchResumes(t *testing.T) {
	f := newHopFixture(t, nil)
	sh := f.md.Splits["train"].Shards[1]
	rec := sh.Records[2]
	spans, err := localSpans(t, f.objects[sh.File])
	if err != nil {
		t.Fatal(err)
	}
	s := spans[rec.Index]
	cut := (s.End() - s.Offset) / 2
	plan := func(off int64, nth int) testkit.Fault {
		if off == s.Offset && nth == 0 {
			return testkit.DropAfter(cut)
		}
		return testkit.Pass()
	}
	f.plan.Store(&plan)
	st, ds := f.open(t, t.TempDir())
	ep, err := ds.Episode(context.Background(), Ref{Split: "train", Shard: 1, Record: rec.Index})
	if err != nil {
		t.Fatalf("episode after a cut range read: %v", err)
	}
	checkEpisode(t, f.md.Name, ep, rec)
	want := fmt.Sprintf("bytes=%d-%d", s.Offset+cut, s.End()-1)
	resumed := false
	for _, r := range f.proxy.Requests() {
		resumed = resumed || r.Range == want
	}
	if !resumed {
		t.Fatalf("no request resumed with Range %s: %+v", want, f.proxy.Requests())
	}
	if got, n := st.Disk().Stats.RangeBytes.Load(), s.End()-s.Offset; got != n {
		t.Errorf("%d record bytes delivered, want %d (each byte once)", got, n)
	}
}

// TestRewrittenShardReindexed: a shard rewritten (a new generation) after
// it was indexed is detected by its generation when a record not yet
// cached is read: the shard is indexed again and the record served from
// the new bytes, whole; the old version's cached records are dropped.
func TestRewrittenShardReindexed(t *testing.T) {
	f := newHopFixture(t, nil)
	shards := f.md.Splits["train"].Shards
	name := shards[0].File
	st, ds := f.open(t, t.TempDir())
	ctx := context.Background()
	ep, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: 0})
	if err != nil {
		t.Fatal(err)
	}
	checkEpisode(t, f.md.Name, ep, shards[0].Records[0])
	old, err := ds.remoteIndex(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	oldPart := func() bool {
		s := old.spans[0]
		return cacheView(st, ds).ContainsRange(name, old.info.Version, s.Offset, s.End()-s.Offset)
	}
	if !oldPart() {
		t.Fatal("record 0 of the old version is not cached as a range")
	}

	// The new bytes: shard 1's records under shard 0's name, so every
	// record of the new version differs from the old one's.
	f.rewrite(name, f.objects[shards[1].File])
	hopsBefore := st.Stats.Hops.Load()
	ep, err = ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: 1})
	if err != nil {
		t.Fatalf("record 1 after the rewrite: %v", err)
	}
	if want := shards[1].Records[1]; ep.Steps() != want.NumSteps {
		t.Fatalf("record 1 after the rewrite has %d steps; the new bytes' record has %d", ep.Steps(), want.NumSteps)
	}
	if st.Stats.Hops.Load() == hopsBefore {
		t.Fatal("the rewritten shard was not indexed again")
	}
	now, err := ds.remoteIndex(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if now.info.Version == old.info.Version {
		t.Fatal("the index still has the old version")
	}
	want, _ := localSpans(t, f.objects[shards[1].File])
	if fmt.Sprint(now.spans) != fmt.Sprint(want) {
		t.Fatalf("index after the rewrite %v, want the new bytes' %v", now.spans, want)
	}
	if oldPart() {
		t.Error("the old version's cached record 0 is still in the disk cache")
	}
	// Record 0 was cached from the old version: it is read again, new.
	ep, err = ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: 0})
	if err != nil {
		t.Fatal(err)
	}
	if want := shards[1].Records[0]; ep.Steps() != want.NumSteps {
		t.Fatalf("record 0 after the rewrite has %d steps; the new bytes' record has %d", ep.Steps(), want.NumSteps)
	}
}

// TestRecordsPersistAcrossStores: a second store over the same cache
// directory reuses the first's saved index (no header reads, only the
// shard's metadata to check its version) and cached records (no reads at
// all); a record not cached yet is one ranged read.
func TestRecordsPersistAcrossStores(t *testing.T) {
	f := newHopFixture(t, nil)
	cacheDir := t.TempDir()
	sh := f.md.Splits["train"].Shards[2]
	ctx := context.Background()
	read := func(ds *Dataset, r int) {
		t.Helper()
		ep, err := ds.Episode(ctx, Ref{Split: "train", Shard: 2, Record: sh.Records[r].Index})
		if err != nil {
			t.Fatal(err)
		}
		checkEpisode(t, f.md.Name, ep, sh.Records[r])
	}
	first, ds := f.open(t, cacheDir)
	read(ds, 0)
	read(ds, 0)
	reads, _ := f.shardRequests(sh.File)
	if want := int64(len(sh.Records)) + 1; int64(reads) != want || first.Stats.Hops.Load() != want-1 {
		t.Fatalf("first store: %d reads (%d header reads); want %d header reads and one record", reads, first.Stats.Hops.Load(), want-1)
	}
	first.Close()

	second, ds := f.open(t, cacheDir)
	read(ds, 0)
	if r, _ := f.shardRequests(sh.File); r != reads || second.Stats.Hops.Load() != 0 {
		t.Fatalf("second store, a cached record: %d more reads, %d header reads; want none", r-reads, second.Stats.Hops.Load())
	}
	read(ds, 1)
	if r, _ := f.shardRequests(sh.File); r != reads+1 || second.Disk().Stats.RangesFetched.Load() != 1 {
		t.Fatalf("second store, a record not cached: %d more reads, want 1", r-reads)
	}
}

// TestFetchEpisodesNotShards: a batch's episodes are fetched without their
// whole shards, in fewer bytes than the shards; a whole shard in the cache
// is read instead of fetching a record.
func TestFetchEpisodesNotShards(t *testing.T) {
	f := newHopFixture(t, nil)
	s, ds := f.open(t, t.TempDir())
	ctx := context.Background()
	var refs []EpisodeRef
	var records, shardBytes int64
	for i, sh := range f.md.Splits["train"].Shards {
		refs = append(refs, EpisodeRef{ds, Ref{Split: "train", Shard: i, Record: 0}}, EpisodeRef{ds, Ref{Split: "train", Shard: i, Record: 0}})
		records++
		shardBytes += int64(len(f.objects[sh.File]))
	}
	if err := FetchEpisodes(ctx, s, refs); err != nil {
		t.Fatal(err)
	}
	if got := s.Disk().Stats.RangesFetched.Load(); got != records {
		t.Fatalf("%d records fetched for %d distinct episodes", got, records)
	}
	if got := s.Disk().Stats.RangeBytes.Load(); got >= shardBytes {
		t.Fatalf("%d record bytes fetched; the whole shards are %d", got, shardBytes)
	}
	// The whole shard, once there, is preferred.
	if err := FetchShards(ctx, s, []ShardRef{{ds, "train", 0}}); err != nil {
		t.Fatal(err)
	}
	before := s.Disk().Stats.RangesFetched.Load()
	rec := f.md.Splits["train"].Shards[0].Records[1]
	ep, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: rec.Index})
	if err != nil {
		t.Fatal(err)
	}
	checkEpisode(t, f.md.Name, ep, rec)
	if s.Disk().Stats.RangesFetched.Load() != before {
		t.Fatal("a record was fetched although its whole shard is in the disk cache")
	}
}

// fixtureSpans returns the record spans of shard sh of f, failing unless it
// has at least need records.
func fixtureSpans(t *testing.T, f *hopFixture, sh testkit.ManifestShard, need int) []tfrecord.Span {
	t.Helper()
	spans, err := localSpans(t, f.objects[sh.File])
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) < need {
		t.Fatalf("shard %s has %d records; the test needs %d", sh.File, len(spans), need)
	}
	return spans
}

// prefetchUntil starts a prefetch of train shard 0 (whose first request the
// fixture's plan hangs) and returns once its first delivered bytes are in
// the download's temp file. The prefetch's result arrives on the channel.
func prefetchUntil(t *testing.T, ctx context.Context, f *hopFixture, s *store.Store, ds *Dataset, name string, delivered int64) <-chan error {
	t.Helper()
	prefetched := make(chan error, 1)
	go func() {
		_, err := Prefetch(ctx, s, []ShardRef{{ds, "train", 0}}, 1, nil)
		prefetched <- err
	}()
	select {
	case <-f.proxy.Hung:
	case <-time.After(10 * time.Second):
		t.Fatal("the prefetch never reached its hang")
	}
	testkit.WaitFor(t, 10*time.Second, time.Millisecond, "the delivered bytes in the download's temp file", func() bool {
		o, err := ds.shardObject(ctx, name)
		return err == nil && cacheView(s, ds).FilledObject(o, 0, delivered)
	})
	return prefetched
}

// checkReads fails unless the ranged reads among requests are exactly want
// (metadata requests, which have no Range, are left out).
func checkReads(t *testing.T, requests []testkit.SeenRequest, want ...string) {
	t.Helper()
	left := map[string]bool{}
	for _, w := range want {
		left[w] = true
	}
	for _, r := range requests {
		if r.Method != "GET" || r.Range == "" {
			continue
		}
		if !left[r.Range] {
			t.Errorf("unexpected read %q; want only %q", r.Range, want)
		}
		delete(left, r.Range)
	}
	if len(left) != 0 {
		t.Errorf("reads never made: %v", left)
	}
}

// checkCachedShard fails unless the whole cached copy of the named shard
// is want, byte for byte.
func checkCachedShard(t *testing.T, ds *Dataset, name string, want []byte) {
	t.Helper()
	o, err := ds.shardObject(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := ds.src.OpenCached(o)
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	got := make([]byte, whole.Size())
	if _, err := whole.ReadAt(got, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the cached shard %s differs from the object", name)
	}
}

// TestRecordFromPrefetchUnderWay: while a whole-shard prefetch streams the
// shard, a record whose bytes have already arrived is read from that
// download, checked, and cached, without a request of its own.
func TestRecordFromPrefetchUnderWay(t *testing.T) {
	f := newHopFixture(t, nil)
	sh := f.md.Splits["train"].Shards[0]
	spans := fixtureSpans(t, f, sh, 4)
	s, ds := f.open(t, t.TempDir())
	ctx := context.Background()
	// Index the shard before the download starts.
	if _, err := ds.remoteIndex(ctx, sh.File); err != nil {
		t.Fatal(err)
	}
	// The download delivers records 0 and 1, then hangs, and hangs again
	// each time it resumes. (Its Stat is the object's second metadata
	// request: nth 1.)
	delivered := spans[1].End()
	plan := func(off int64, nth int) testkit.Fault {
		switch {
		case off == 0 && nth == 0:
			return testkit.HangAfter(delivered)
		case off == delivered:
			return testkit.HangAtOnce()
		}
		return testkit.Pass()
	}
	f.plan.Store(&plan)
	pctx, cancel := context.WithCancel(ctx)
	prefetched := prefetchUntil(t, pctx, f, s, ds, sh.File, delivered)
	defer func() {
		cancel()
		<-prefetched
	}()

	requests := len(f.proxy.Requests())
	rec := sh.Records[1]
	ep, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: rec.Index})
	if err != nil {
		t.Fatal(err)
	}
	checkEpisode(t, f.md.Name, ep, rec)
	if got := s.Disk().Stats.RangesFromFill.Load(); got != 1 {
		t.Errorf("%d records read from the download under way, want 1", got)
	}
	// (The prefetch itself, paused while the record was read, abandons its
	// request and resumes at the byte it reached.)
	own := fmt.Sprintf("bytes=%d-", spans[1].Offset)
	for _, r := range f.proxy.Requests()[requests:] {
		if strings.HasPrefix(r.Range, own) {
			t.Errorf("reading a record the download had delivered requested it: %+v", r)
		}
	}
	// Record 3 has not arrived: it is fetched on its own. (Record 2 starts
	// where the download hangs, so its own request would hang too.)
	rec = sh.Records[3]
	if ep, err = ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: rec.Index}); err != nil {
		t.Fatal(err)
	}
	checkEpisode(t, f.md.Name, ep, rec)
	if got := s.Disk().Stats.RangesFromFill.Load(); got != 1 {
		t.Errorf("%d records read from the download under way, want 1 (record 3 had not arrived)", got)
	}
}

// TestWholeShardReusesCachedRecords: a whole-shard download copies the
// records already cached on their own from the disk and fetches only the
// bytes between them; the shard it publishes is the object, byte for byte.
func TestWholeShardReusesCachedRecords(t *testing.T) {
	f := newHopFixture(t, nil)
	sh := f.md.Splits["train"].Shards[0]
	spans := fixtureSpans(t, f, sh, 3)
	s, ds := f.open(t, t.TempDir())
	ctx := context.Background()
	for _, i := range []int{0, 2} {
		if _, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: sh.Records[i].Index}); err != nil {
			t.Fatal(err)
		}
	}
	requests := len(f.proxy.Requests())
	if n, err := Prefetch(ctx, s, []ShardRef{{ds, "train", 0}}, 1, nil); err != nil || n != 1 {
		t.Fatalf("prefetch = %d, %v; want the shard", n, err)
	}
	if got := s.Disk().Stats.RangesReused.Load(); got != 2 {
		t.Errorf("%d cached records reused, want 2", got)
	}
	// What was fetched: everything but records 0 and 2.
	checkReads(t, f.proxy.Requests()[requests:],
		fmt.Sprintf("bytes=%d-%d", spans[0].End(), spans[2].Offset-1),
		fmt.Sprintf("bytes=%d-%d", spans[2].End(), int64(len(f.objects[sh.File]))-1))
	checkCachedShard(t, ds, sh.File, f.objects[sh.File])
}

// TestPausedPrefetchSkipsRecordsCachedMeanwhile: a whole-shard prefetch
// paused (its request abandoned) while a batch fetches one of the shard's
// records on its own resumes around that record: its bytes are copied from
// the disk, not fetched twice.
func TestPausedPrefetchSkipsRecordsCachedMeanwhile(t *testing.T) {
	f := newHopFixture(t, nil)
	sh := f.md.Splits["train"].Shards[0]
	data := f.objects[sh.File]
	spans := fixtureSpans(t, f, sh, 5)
	s, ds := f.open(t, t.TempDir())
	ctx := context.Background()
	if _, err := ds.remoteIndex(ctx, sh.File); err != nil {
		t.Fatal(err)
	}
	delivered := spans[1].End()
	plan := func(off int64, nth int) testkit.Fault {
		if off == 0 && nth == 0 {
			return testkit.HangAfter(delivered)
		}
		return testkit.Pass()
	}
	f.plan.Store(&plan)
	prefetched := prefetchUntil(t, ctx, f, s, ds, sh.File, delivered)
	requests := len(f.proxy.Requests())
	rec := sh.Records[3]
	ep, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: rec.Index})
	if err != nil {
		t.Fatal(err)
	}
	checkEpisode(t, f.md.Name, ep, rec)
	select {
	case err := <-prefetched:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the paused prefetch never completed")
	}
	r3 := spans[rec.Index]
	checkReads(t, f.proxy.Requests()[requests:],
		fmt.Sprintf("bytes=%d-%d", r3.Offset, r3.End()-1),        // the record, on its own
		fmt.Sprintf("bytes=%d-%d", delivered, r3.Offset-1),       // the prefetch, up to it
		fmt.Sprintf("bytes=%d-%d", r3.End(), int64(len(data))-1)) // and after it
	checkCachedShard(t, ds, sh.File, data)
}

// wholeCached reports whether the disk cache holds the whole named shard,
// of the version the dataset reads.
func wholeCached(t *testing.T, ds *Dataset, name string) bool {
	t.Helper()
	o, err := ds.shardObject(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return ds.src.Contains(o)
}
