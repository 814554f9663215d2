package rlds

import (
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/store"

	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
)

// The fixtures and their ground truth, written by tensorflow_datasets itself
// (testdata/generate.py).
const fixtureDir = "../../testdata"

// The manifest's types, shared with other packages' tests.
type (
	manifest        = testkit.Manifest
	manifestDataset = testkit.ManifestDataset
	manifestRecord  = testkit.ManifestRecord
)

func loadManifest(t testing.TB) manifest { return testkit.LoadManifest(t) }

// languageKey is where each fixture keeps its instruction.
var languageKey = map[string]string{
	"tiny_bridge": "steps/language_instruction",
	"tiny_table":  "steps/observation/instruction",
	"tiny_kuka":   "episode_metadata/language_instruction",
}

func newTestStore(t testing.TB, cacheDir string) *store.Store {
	t.Helper()
	if cacheDir == "" {
		cacheDir = t.TempDir()
	}
	s, err := store.NewStore(mustOptions(stackOptions(t, cacheDir, 1<<30, retry.Policy{})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func openLocal(t testing.TB, s *store.Store, dir string) *Dataset {
	t.Helper()
	src, err := local.Open(filepath.Join(fixtureDir, dir))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := Open(context.Background(), s, "", src)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// checkDataset reads every episode of every split and compares it with the
// manifest.
func checkDataset(t *testing.T, ds *Dataset, md manifestDataset) {
	t.Helper()
	ctx := context.Background()
	for split, ms := range md.Splits {
		info, ok := ds.Meta.Split(split)
		if !ok {
			t.Fatalf("%s: split %s missing", md.Name, split)
		}
		if info.NumExamples() != ms.NumExamples {
			t.Errorf("%s/%s: %d episodes, manifest %d", md.Name, split, info.NumExamples(), ms.NumExamples)
		}
		for si, shard := range ms.Shards {
			name, err := ds.ShardName(split, si)
			if err != nil || name != shard.File {
				t.Fatalf("%s/%s shard %d: name %q, %v; manifest %q", md.Name, split, si, name, err, shard.File)
			}
			for _, rec := range shard.Records {
				ep, err := ds.Episode(ctx, Ref{Split: split, Shard: si, Record: rec.Index})
				if err != nil {
					t.Fatalf("%s/%s/%d/%d: %v", md.Name, split, si, rec.Index, err)
				}
				checkEpisode(t, md.Name, ep, rec)
			}
		}
	}
}

func checkEpisode(t *testing.T, dataset string, ep episode.Episode, rec manifestRecord) {
	t.Helper()
	where := ep.ID()
	if want := fmt.Sprintf("%s/%s/%d/%d", dataset, ep.Key().Split, ep.Key().Shard, ep.Key().Record); ep.ID() != want {
		t.Errorf("episode id %q, want %q", ep.ID(), want)
	}
	if ep.Steps() != rec.NumSteps {
		t.Fatalf("%s: %d steps, manifest %d", where, ep.Steps(), rec.NumSteps)
	}
	ints := func(key string) []int64 {
		v, err := ep.Feature(key)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		got, err := v.Int64s(nil)
		if err != nil {
			t.Fatalf("%s %s: %v", where, key, err)
		}
		return got
	}
	floats := func(key string) []float64 {
		v, err := ep.Feature(key)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		got, err := v.Float64s(nil)
		if err != nil {
			t.Fatalf("%s %s: %v", where, key, err)
		}
		return got
	}
	if got := ints("episode_metadata/episode_id"); len(got) != 1 || got[0] != rec.EpisodeID {
		t.Errorf("%s: episode_id %v, manifest %d", where, got, rec.EpisodeID)
	}
	boolsEqual(t, where+" is_first", ints("steps/is_first"), rec.IsFirst)
	boolsEqual(t, where+" is_last", ints("steps/is_last"), rec.IsLast)
	floatsEqual(t, where+" reward", floats("steps/reward"), rec.Reward)
	floatsEqual(t, where+" discount", floats("steps/discount"), rec.Discount)
	for key, steps := range rec.Action {
		floatsEqual(t, where+" "+key, floats(key), slices.Concat(steps...))
	}
	for key, steps := range rec.State {
		floatsEqual(t, where+" "+key, floats(key), slices.Concat(steps...))
	}
	if rec.Depth != nil {
		depth := floats("steps/observation/depth")
		per := len(depth) / ep.Steps()
		for s, want := range rec.Depth.SHA256 {
			buf := make([]byte, 0, per*4)
			for _, x := range depth[s*per : (s+1)*per] {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(x)))
			}
			if sum := sha256.Sum256(buf); hex.EncodeToString(sum[:]) != want {
				t.Errorf("%s: zlib depth of step %d differs from TFDS's", where, s)
			}
		}
	}
	lang, err := ep.Feature(languageKey[dataset])
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if rec.Codepoints != nil {
		got, err := lang.Int64s(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[:len(rec.Codepoints)], rec.Codepoints) {
			t.Errorf("%s: codepoints of step 0 differ", where)
		}
	} else if got := string(lang.Bytes(0)); got != rec.Language {
		t.Errorf("%s: language %q, manifest %q", where, got, rec.Language)
	}
	for key, want := range rec.Images {
		v, err := ep.Feature(key)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		for s := range ep.Steps() {
			cfg, format, err := image.DecodeConfig(bytes.NewReader(v.Bytes(s)))
			if err != nil {
				t.Fatalf("%s %s step %d: %v", where, key, s, err)
			}
			if format != v.Spec().Encoding || cfg.Height != want.Height || cfg.Width != want.Width {
				t.Errorf("%s %s step %d: %s %dx%d, manifest %s %dx%d", where, key, s,
					format, cfg.Height, cfg.Width, v.Spec().Encoding, want.Height, want.Width)
			}
		}
	}
}

func boolsEqual(t *testing.T, what string, got []int64, want []bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, manifest %d", what, len(got), len(want))
		return
	}
	for i := range got {
		if (got[i] != 0) != want[i] {
			t.Errorf("%s[%d] = %d, manifest %v", what, i, got[i], want[i])
		}
	}
}

func floatsEqual(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, manifest %d", what, len(got), len(want))
		return
	}
	for i := range got {
		if got[i] != want[i] { // the manifest holds the exact float32 values
			t.Errorf("%s[%d] = %v, manifest %v", what, i, got[i], want[i])
			return
		}
	}
}

func TestFixturesMatchManifest(t *testing.T) {
	m := loadManifest(t)
	s := newTestStore(t, "")
	for name, md := range m.Datasets {
		t.Run(name, func(t *testing.T) {
			checkDataset(t, openLocal(t, s, md.Dir), md)
		})
	}
}

// refusedSplits are split strings TFDS accepts but oxefs refuses on purpose,
// with the reason (also in the README).
var refusedSplits = map[string]string{
	"train[25%:10%]": "reversed bounds: TFDS yields records from outside the slice or fails while iterating",
}

// TestSplitStringsMatchTFDS resolves every split string TFDS was asked
// about, reads the episodes it selects and compares their ids, in order,
// with what tfds.load returned.
func TestSplitStringsMatchTFDS(t *testing.T) {
	m := loadManifest(t)
	s := newTestStore(t, "")
	ctx := context.Background()
	for name, md := range m.Datasets {
		ds := openLocal(t, s, md.Dir)
		for _, tc := range md.SplitStrings {
			t.Run(name+"/"+tc.Split, func(t *testing.T) {
				ranges, err := ds.Select(tc.Split)
				if why, ok := refusedSplits[tc.Split]; ok {
					if err == nil {
						t.Fatalf("selects %v; oxefs refuses it (%s)", ranges, why)
					}
					return
				}
				if !tc.OK {
					if err == nil {
						t.Fatalf("selects %v; TFDS failed with %q", ranges, tc.Error)
					}
					return
				}
				if err != nil {
					t.Fatalf("%v; TFDS selected %d episodes", err, len(tc.EpisodeIDs))
				}
				var ids []int64
				for _, r := range ranges {
					info, _ := ds.Meta.Split(r.Split)
					for i := r.From; i < r.To; i++ {
						shard, rec := info.Locate(i)
						ep, err := ds.Episode(ctx, Ref{Split: r.Split, Shard: shard, Record: int(rec)})
						if err != nil {
							t.Fatal(err)
						}
						v, err := ep.Feature("episode_metadata/episode_id")
						if err != nil {
							t.Fatal(err)
						}
						id, _ := v.Int64s(nil)
						ids = append(ids, id[0])
					}
				}
				if !slices.Equal(ids, tc.EpisodeIDs) {
					t.Fatalf("episodes %v, TFDS %v", ids, tc.EpisodeIDs)
				}
			})
		}
	}
}

func TestEmptySplitIsClearError(t *testing.T) {
	s := newTestStore(t, "")
	ds := openLocal(t, s, "datasets/tiny_bridge/1.0.0")
	for _, spec := range []string{"train[:1%]", "train[5:5]"} {
		_, err := ds.Select(spec)
		if err == nil {
			t.Fatalf("%s: no error", spec)
		}
		for _, want := range []string{spec, "24"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not mention %q", spec, err, want)
			}
		}
	}
	_, err := ds.Select("trian")
	if err == nil || !strings.Contains(err.Error(), "train") || !strings.Contains(err.Error(), "val") {
		t.Errorf("unknown split: error %v should name the valid splits", err)
	}
}

func TestUnknownFeatureNamesValidKeys(t *testing.T) {
	s := newTestStore(t, "")
	ds := openLocal(t, s, "datasets/tiny_bridge/1.0.0")
	ep, err := ds.Episode(context.Background(), Ref{Split: "train", Shard: 0, Record: 0})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ep.Feature("steps/observation/rgb")
	if !errors.Is(err, episode.ErrUnknownFeature) || !strings.Contains(err.Error(), "steps/observation/wrist_image") {
		t.Fatalf("got %v, want episode.ErrUnknownFeature naming the keys that exist", err)
	}
}

// gcsFixture serves testdata directories from fake GCS under the test
// prefix and returns a GCS source for each.
func gcsFixture(t testing.TB, dirs ...string) map[string]*gcs.Backend {
	t.Helper()
	srv := testkit.StartFakeGCS(t, fixtureObjects(t, dirs...))
	client := testkit.NewGCSClient(t, srv.URL())
	out := map[string]*gcs.Backend{}
	for _, dir := range dirs {
		out[dir] = gcs.NewWithClient(client, testkit.GCSBucket, path.Join(testkit.GCSPrefix, dir))
	}
	return out
}

// fixtureObjects reads testdata directories into objects named dir/file.
func fixtureObjects(t testing.TB, dirs ...string) map[string][]byte {
	t.Helper()
	objects := map[string][]byte{}
	for _, dir := range dirs {
		ents, err := os.ReadDir(filepath.Join(fixtureDir, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(fixtureDir, dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			objects[path.Join(dir, e.Name())] = b
		}
	}
	return objects
}

// TestFixturesThroughGCS reads every fixture through the real storage client
// from fake-gcs-server, through the disk cache, twice: the second pass must
// come from the disk cache alone.
func TestFixturesThroughGCS(t *testing.T) {
	m := loadManifest(t)
	var dirs []string
	for _, md := range m.Datasets {
		dirs = append(dirs, md.Dir)
	}
	srcs := gcsFixture(t, dirs...)
	cacheDir := t.TempDir()
	for pass := range 2 {
		s := newTestStore(t, cacheDir)
		for name, md := range m.Datasets {
			t.Run(fmt.Sprintf("%s/pass%d", name, pass), func(t *testing.T) {
				ds, err := Open(context.Background(), s, "", srcs[md.Dir])
				if err != nil {
					t.Fatal(err)
				}
				checkDataset(t, ds, md)
			})
		}
		hits, misses := s.Disk().Stats.Hits.Load(), s.Disk().Stats.Misses.Load()
		if pass == 0 && misses == 0 {
			t.Fatal("first pass: no disk cache misses, so nothing was fetched")
		}
		if pass == 1 && (misses != 0 || hits == 0) {
			t.Fatalf("second pass: %d misses, %d hits; want every shard from the disk cache", misses, hits)
		}
	}
}

// TestTwoStoresShareCacheDir runs two stores over one cache directory at
// once, as two daemons on one node would, reading the same GCS datasets.
func TestTwoStoresShareCacheDir(t *testing.T) {
	m := loadManifest(t)
	md := m.Datasets["tiny_bridge"]
	srcs := gcsFixture(t, md.Dir)
	cacheDir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 2 {
		s := newTestStore(t, cacheDir)
		ds, err := Open(context.Background(), s, "", srcs[md.Dir])
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(fmt.Sprintf("store%d", i), func(t *testing.T) { checkDataset(t, ds, md) })
		}()
	}
	wg.Wait()
	entries, err := filepath.Glob(filepath.Join(cacheDir, "files", "*", "*.tfrecord-*"))
	if err != nil {
		t.Fatal(err)
	}
	var want int
	for _, sp := range md.Splits {
		want += len(sp.Shards)
	}
	var shards int
	for _, e := range entries {
		if filepath.Ext(e) != ".lock" {
			shards++
		}
	}
	if shards != want {
		t.Fatalf("cache holds %d shard files, want %d (one per shard)", shards, want)
	}
}

func TestLengthIndex(t *testing.T) {
	m := loadManifest(t)
	s := newTestStore(t, "")
	md := m.Datasets["tiny_bridge"]
	ds := openLocal(t, s, md.Dir)
	if _, err := ds.LoadLengths(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("fresh cache: LoadLengths = %v, want ErrNotExist", err)
	}
	var progressed int
	var mu sync.Mutex
	l, err := ds.BuildLengths(context.Background(), ds.Splits(), 2, func(n int) {
		mu.Lock()
		progressed += n
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	var total int
	for split, ms := range md.Splits {
		total += int(ms.NumExamples)
		var want []int32
		for _, sh := range ms.Shards {
			for _, r := range sh.Records {
				want = append(want, int32(r.NumSteps))
			}
		}
		if !slices.Equal(l.Splits[split], want) {
			t.Errorf("%s lengths %v, manifest %v", split, l.Splits[split], want)
		}
	}
	if progressed != total {
		t.Errorf("progress reported %d episodes, want %d", progressed, total)
	}
	// It persists: a new store over the same cache directory loads it.
	s2 := newTestStore(t, s.Disk().Dir())
	l2, err := openLocal(t, s2, md.Dir).LoadLengths()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l2.Splits["train"], l.Splits["train"]) {
		t.Fatal("reloaded index differs")
	}
	st, ok := l2.Stats("train")
	if !ok || st.Episodes != int(md.Splits["train"].NumExamples) || st.Min > st.Median || st.Median > st.Max {
		t.Fatalf("stats %+v", st)
	}
}
