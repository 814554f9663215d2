package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
)

type fetchStats struct {
	Fetch struct {
		Bytes       int64 `json:"bytes"`
		RecordBytes int64 `json:"record_bytes"`
	} `json:"fetch"`
}

// TestMountFetchRateDemandFirst: under --max-fetch-rate the batch a
// reader waits for gets the link before the whole-shard prefetch. Six
// batches read one after the other from a rate-capped GCS source
// (--readahead 0, so every batch is a demand read) fetch their episodes'
// records; the prefetch, which runs meanwhile, may take the link only
// between two batches and an eighth of it while one waits. Its bytes (all
// bytes fetched but the records') must stay under a sixth of the
// records' bytes (0.3–0.45 MB measured): the previous limiter let the
// prefetch run the bucket into debt, and it took a quarter to a half
// (1.2–2.3 MB beside 4.7 MB of records; 18.5–20 s for what the records
// alone take 15.6 s to fetch).
func TestMountFetchRateDemandFirst(t *testing.T) {
	testkit.RequireFUSE(t)
	data := t.TempDir()
	if _, stderr, code := runOxefs(t, nil, "synth", data, "--datasets", "2", "--episodes", "16", "--steps", "12", "--shards", "4"); code != 0 {
		t.Fatalf("synth: exit %d\n%s", code, stderr)
	}
	srv := fakeGCS(t, "synth", map[string]string{
		"synth_fractal/1.0.0": filepath.Join(data, "synth_fractal", "1.0.0"),
		"synth_bridge/1.0.0":  filepath.Join(data, "synth_bridge", "1.0.0"),
	})
	cfg := filepath.Join(t.TempDir(), "mix.yaml")
	if err := os.WriteFile(cfg, []byte(`batch_size: 2
image_size: [64, 64]
datasets:
  - source: gs://synth/synth_fractal/1.0.0
    anonymous: true
    image_key: steps/observation/image
    offset: 2
  - source: gs://synth/synth_bridge/1.0.0
    anonymous: true
    image_key: steps/observation/image_0
    offset: 2
`), 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := t.TempDir()
	env := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(srv.URL(), "http://")}
	startMount(t, mnt, env, "--config", cfg, "--cache-dir", t.TempDir(), "--max-fetch-rate", "300KB", "--readahead", "0")
	var before, after fetchStats
	readJSON(t, filepath.Join(mnt, "stats.json"), &before)
	start := time.Now()
	for n := range 6 {
		if _, err := os.ReadFile(filepath.Join(mnt, "batches", "00000"+string(rune('0'+n))+".npy")); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	readJSON(t, filepath.Join(mnt, "stats.json"), &after)
	records := after.Fetch.RecordBytes - before.Fetch.RecordBytes
	other := after.Fetch.Bytes - before.Fetch.Bytes - records
	t.Logf("6 batches in %v at 300 KB/s: %d KB of records, %d KB else (the prefetch)", took.Round(10*time.Millisecond), records/1000, other/1000)
	if records <= 0 {
		t.Fatalf("no record fetched: %+v", after)
	}
	if other > records/6 {
		t.Fatalf("the prefetch fetched %d bytes beside %d of the batches' records, bound a sixth", other, records)
	}
}
