package rlds

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/storage/s3"
	"github.com/oxefs/oxefs/store"
)

// rangeLen returns the bytes a "bytes=A-B" Range asks for, -1 for none or
// an open end.
func rangeLen(h string) int64 {
	a, b, ok := strings.Cut(strings.TrimPrefix(h, "bytes="), "-")
	if !ok || b == "" {
		return -1
	}
	from, err1 := strconv.ParseInt(a, 10, 64)
	to, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return to - from + 1
}

// flipStore opens tiny_bridge from fake GCS through a proxy that flips a
// byte of the shard reads flip picks, with a store over cacheDir: byte 3
// the first time a range is asked for (in a header's length or CRC, in a
// record's), another byte each time after, so that no two reads of a
// range give the same bytes (a proxy that damages the same bytes the same
// way on every read is indistinguishable from damage at the source).
func flipStore(t *testing.T, cacheDir string, flip func(r testkit.SeenRequest, nth int) bool) (*Dataset, *store.Store, *testkit.FaultProxy) {
	t.Helper()
	md := loadManifest(t).Datasets["tiny_bridge"]
	upstream := testkit.StartFakeGCS(t, fixtureObjects(t, md.Dir))
	proxy := testkit.NewRequestFaultProxy(t, upstream.URL(), func(r testkit.SeenRequest, nth int) testkit.Fault {
		// Only shard reads: the metadata (dataset_info.json,
		// features.json) is read whole by the client, which checks it.
		if r.Method == "GET" && !strings.HasPrefix(r.Path, "/storage/v1/") && strings.Contains(r.Path, ".tfrecord-") && flip(r, nth) {
			return testkit.FlipAt(3 + int64(nth%8))
		}
		return testkit.Pass()
	})
	src := gcs.NewWithClient(testkit.NewGCSClient(t, proxy.URL()), testkit.GCSBucket, path.Join(testkit.GCSPrefix, md.Dir))
	opts, _ := stackOptions(t, cacheDir, 1<<30, retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		MaxElapsed: 2 * time.Second, StallTimeout: 2 * time.Second})
	s, err := store.NewStore(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ds, err := Open(t.Context(), s, "", src)
	if err != nil {
		t.Fatal(err)
	}
	return ds, s, proxy
}

// readEvery reads every episode of tiny_bridge at once and compares each
// read that succeeds with the manifest; it returns the errors of the reads
// that failed.
func readEvery(t *testing.T, ds *Dataset) []error {
	t.Helper()
	md := loadManifest(t).Datasets["tiny_bridge"]
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for split, ms := range md.Splits {
		for si, shard := range ms.Shards {
			for _, rec := range shard.Records {
				wg.Go(func() {
					ep, err := ds.Episode(context.Background(), Ref{Split: split, Shard: si, Record: rec.Index})
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
					checkEpisode(t, md.Name, ep, rec)
				})
			}
		}
	}
	wg.Wait()
	return errs
}

// savedBroken lists the record indexes saved under cacheDir that call a
// shard's framing broken.
func savedBroken(t *testing.T, cacheDir string) []string {
	t.Helper()
	var broken []string
	err := filepath.WalkDir(cacheDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(p, string(filepath.Separator)+"records"+string(filepath.Separator)) {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), `"broken"`) {
			broken = append(broken, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return broken
}

// TestFlippedBytesAreFetchedAgain: a byte flipped in transit, in a
// 12-byte header read, a record's range or a whole-shard download, is
// fetched again, never kept: every episode read cold is the manifest's,
// and so is every episode read again after a restart with no faults (the
// cache holds nothing wrong), and no record index calls a shard broken.
func TestFlippedBytesAreFetchedAgain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flip  func(r testkit.SeenRequest, nth int) bool
		whole bool // prefetch every shard whole first (in slices, as prefetches download)
	}{
		{"header reads", func(r testkit.SeenRequest, nth int) bool { return nth == 0 && rangeLen(r.Range) == 12 }, false},
		{"record ranges", func(r testkit.SeenRequest, nth int) bool { return nth == 0 && rangeLen(r.Range) > 12 }, false},
		{"whole-shard slices", func(r testkit.SeenRequest, nth int) bool {
			return nth == 0 && strings.HasPrefix(r.Range, "bytes=0-") && rangeLen(r.Range) > 12
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cacheDir := t.TempDir()
			ds, s, proxy := flipStore(t, cacheDir, tc.flip)
			if tc.whole {
				md := loadManifest(t).Datasets["tiny_bridge"]
				var refs []ShardRef
				for split, ms := range md.Splits {
					for si := range ms.Shards {
						refs = append(refs, ShardRef{Dataset: ds, Split: split, Shard: si})
					}
				}
				if n, err := Prefetch(t.Context(), s, refs, 2, nil); err != nil || n != len(refs) {
					t.Fatalf("prefetch: %d of %d shards, %v", n, len(refs), err)
				}
			}
			if errs := readEvery(t, ds); len(errs) > 0 {
				t.Fatalf("cold, with flips: %d reads failed, first: %v", len(errs), errs[0])
			}
			if proxy.Flipped() == 0 {
				t.Fatal("the proxy flipped nothing: the test tests nothing")
			}
			s.Close()
			if b := savedBroken(t, cacheDir); len(b) > 0 {
				t.Fatalf("record indexes saved as broken from flipped bytes: %q", b)
			}
			ds, _, proxy = flipStore(t, cacheDir, func(testkit.SeenRequest, int) bool { return false })
			if errs := readEvery(t, ds); len(errs) > 0 {
				t.Fatalf("after a restart, no faults: %d reads failed, first: %v", len(errs), errs[0])
			}
		})
	}
}

// TestFlippedEveryTimeIsEIONotCorrupt: bytes flipped on every read are a
// transient error for the reads that need them (EIO), never corrupt
// episodes (which would be substituted) nor a broken record index; once
// the link is clean, every episode reads right.
func TestFlippedEveryTimeIsEIONotCorrupt(t *testing.T) {
	cacheDir := t.TempDir()
	var flipping atomic.Bool
	flipping.Store(true)
	ds, s, _ := flipStore(t, cacheDir, func(testkit.SeenRequest, int) bool { return flipping.Load() })
	errs := readEvery(t, ds)
	if len(errs) == 0 {
		t.Fatal("every read flipped, yet every episode read")
	}
	for _, err := range errs {
		if errors.Is(err, episode.ErrCorrupt) || !errors.Is(err, storage.ErrChecksum) {
			t.Fatalf("a read flipped every time: %v; want a storage.ErrChecksum, not corrupt data", err)
		}
	}
	s.Close()
	if b := savedBroken(t, cacheDir); len(b) > 0 {
		t.Fatalf("record indexes saved as broken from flipped bytes: %q", b)
	}
	flipping.Store(false)
	ds, _, _ = flipStore(t, cacheDir, func(testkit.SeenRequest, int) bool { return false })
	if errs := readEvery(t, ds); len(errs) > 0 {
		t.Fatalf("after a restart, no faults: %d reads failed, first: %v", len(errs), errs[0])
	}
}

// TestDamagedCachedRecordIsDropped: a record kept in the disk cache on its
// own whose bytes fail their CRCs when read back (damaged on disk, or kept
// by a build that did not check) is dropped and fetched again: the episode
// reads right, and the cache then holds the right bytes. The damage is
// found on the record's first load in a daemon (here a dataset opened
// again on the same store): a record that passed its CRC is not checked
// again in the daemon's life (see checkedRecords).
func TestDamagedCachedRecordIsDropped(t *testing.T) {
	cacheDir := t.TempDir()
	first, s, proxy := flipStore(t, cacheDir, func(testkit.SeenRequest, int) bool { return false })
	md := loadManifest(t).Datasets["tiny_bridge"]
	rec := md.Splits["train"].Shards[1].Records[2]
	ref := Ref{Split: "train", Shard: 1, Record: rec.Index}
	if _, err := first.Episode(t.Context(), ref); err != nil {
		t.Fatal(err)
	}
	ranges, _ := filepath.Glob(filepath.Join(cacheDir, "files", "*", md.Splits["train"].Shards[1].File+".ranges", "*", "*-*"))
	var kept []string
	for _, p := range ranges {
		if !strings.HasSuffix(p, ".lock") {
			kept = append(kept, p)
		}
	}
	if len(kept) != 1 {
		t.Fatalf("cached ranges of the shard: %q, want the record's", kept)
	}
	good, err := os.ReadFile(kept[0])
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0xff
	if err := os.WriteFile(kept[0], bad, 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := Open(t.Context(), s, "", first.Source)
	if err != nil {
		t.Fatal(err)
	}
	before := len(proxy.Requests())
	ep, err := ds.Episode(t.Context(), ref)
	if err != nil {
		t.Fatalf("a damaged cached record: %v; want it fetched again", err)
	}
	checkEpisode(t, md.Name, ep, rec)
	if len(proxy.Requests()) == before {
		t.Error("the damaged record was not fetched again")
	}
	if now, err := os.ReadFile(kept[0]); err != nil || !bytes.Equal(now, good) {
		t.Errorf("the cached record after the refetch: %v, or other bytes", err)
	}
}

// TestIdenticalDamageTwiceIsReexamined: a header damaged the same way on
// two reads in a row (a proxy that garbles the same byte of every header
// read) looks like the shard's own broken framing. When the source
// publishes a checksum of the whole shard (GCS's CRC32C, a single-part S3
// upload's ETag) and the disk cache can hold it, the store looks again at
// once: the whole shard, fetched and checked against that checksum, is
// what the index is read from, and every episode reads right in the same
// daemon, none substituted for good. With a disk cache too small for a
// whole shard the verdict stands for the daemon's life, but is not kept
// across a restart (the saved record index holds healthy shards only):
// with the source healthy after the restart, every episode reads right.
func TestIdenticalDamageTwiceIsReexamined(t *testing.T) {
	md := loadManifest(t).Datasets["tiny_bridge"]
	files := testkit.ReadDirFiles(t, filepath.Join(fixtureDir, md.Dir))
	// sources serves the fixture from a real fake server of each kind
	// behind a proxy whose plan may damage requests.
	sources := map[string]func(t *testing.T, plan func(testkit.SeenRequest, int) testkit.Fault) storage.Backend{
		"gs": func(t *testing.T, plan func(testkit.SeenRequest, int) testkit.Fault) storage.Backend {
			proxy := testkit.NewRequestFaultProxy(t, testkit.StartFakeGCS(t, files).URL(), plan)
			return gcs.NewWithClient(testkit.NewGCSClient(t, proxy.URL()), testkit.GCSBucket, testkit.GCSPrefix)
		},
		"s3": func(t *testing.T, plan func(testkit.SeenRequest, int) testkit.Fault) storage.Backend {
			srv := testkit.StartFakeS3(t, testkit.S3Bucket, nil)
			for n, data := range files {
				srv.Put(t, testkit.S3Bucket, path.Join(testkit.S3Prefix, n), data)
			}
			proxy := testkit.NewRequestFaultProxy(t, srv.URL, plan)
			cfg := srv.Config()
			cfg.BaseEndpoint = aws.String(proxy.URL())
			return s3.NewWithConfig(cfg, testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
		},
	}
	var smallest int64 = -1 // shard
	for n, b := range files {
		if strings.Contains(n, ".tfrecord-") && (smallest < 0 || int64(len(b)) < smallest) {
			smallest = int64(len(b))
		}
	}
	for _, tc := range []struct {
		name, kind string
		budget     int64 // the disk cache's
		sameDaemon bool  // every episode reads right before any restart
	}{
		{"gs, the shard's CRC32C proves the source healthy", "gs", 1 << 30, true},
		{"s3, the shard's ETag proves the source healthy", "s3", 1 << 30, true},
		{"gs, no room for a whole shard: looked at again after a restart", "gs", 64 << 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var damaging atomic.Bool
			damaging.Store(true)
			src := sources[tc.kind](t, func(r testkit.SeenRequest, nth int) testkit.Fault {
				if damaging.Load() && r.Method == "GET" && strings.Contains(r.Path, ".tfrecord-") && rangeLen(r.Range) == 12 {
					return testkit.FlipAt(3) // the same byte of the length every time
				}
				return testkit.Pass()
			})
			cacheDir := t.TempDir()
			open := func() (*Dataset, *store.Store) {
				opts, _ := stackOptions(t, cacheDir, tc.budget, retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
					MaxElapsed: 2 * time.Second, StallTimeout: 2 * time.Second})
				s, err := store.NewStore(opts)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(s.Close)
				ds, err := Open(t.Context(), s, "", src)
				if err != nil {
					t.Fatal(err)
				}
				return ds, s
			}
			ds, s := open()
			errs := readEvery(t, ds)
			if tc.sameDaemon {
				if len(errs) > 0 {
					t.Fatalf("the whole shards' checksums prove the source healthy, yet %d reads failed, first: %v", len(errs), errs[0])
				}
				if s.Disk().Stats.Verified.Load() == 0 {
					t.Fatal("no whole shard was checked against its checksum: the damage was not met, the test tests nothing")
				}
				return
			}
			if tc.budget >= smallest {
				t.Fatalf("a budget of %d bytes holds the smallest shard (%d bytes): the test tests nothing", tc.budget, smallest)
			}
			corrupt := 0
			for _, err := range errs {
				if errors.Is(err, episode.ErrCorrupt) {
					corrupt++
				}
			}
			if corrupt == 0 {
				t.Fatalf("identical damage on every header read: %d reads failed, none as corrupt data: the test tests nothing", len(errs))
			}
			s.Close()
			if b := savedBroken(t, cacheDir); len(b) > 0 {
				t.Fatalf("a broken verdict saved for later daemons: %q", b)
			}
			damaging.Store(false)
			ds, _ = open()
			if errs := readEvery(t, ds); len(errs) > 0 {
				t.Fatalf("after a restart with a healthy source: %d reads failed, first: %v", len(errs), errs[0])
			}
		})
	}
}
