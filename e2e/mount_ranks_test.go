package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMountRanks: one daemon serving ranks 0-2 of 3 lists the same number
// of batches in every rank/R/, serves in rank/1/ exactly what a daemon of
// its own with --rank 1 --world 3 serves, shares one --mem between the
// ranks and reports each rank's views in its own documents.
func TestMountRanks(t *testing.T) {
	cfg := writeMix(t, "batch_size: 4\nimage_size: [32, 32]\nnum_batches: 7\n")
	all, one := t.TempDir(), t.TempDir()
	startMount(t, all, nil, "--config", cfg, "--cache-dir", t.TempDir(), "--world", "3", "--ranks", "0-2", "--mem", "512MiB")
	startMount(t, one, nil, "--config", cfg, "--cache-dir", t.TempDir(), "--rank", "1", "--world", "3", "--mem", "512MiB")

	type budget struct {
		NumBatches   int64 `json:"num_batches"`
		BudgetBytes  int64 `json:"batch_budget_bytes"`
		MaxOpenBatch int64 `json:"max_concurrent_open_batches"`
	}
	var top struct {
		Ranks []int `json:"ranks"`
		World int   `json:"world"`
		PID   int   `json:"pid"`
	}
	readJSON(t, filepath.Join(all, "info.json"), &top)
	if !slices.Equal(top.Ranks, []int{0, 1, 2}) || top.World != 3 || top.PID == 0 {
		t.Fatalf("info.json: %+v, want ranks [0 1 2] of world 3 and the daemon's pid", top)
	}
	if _, err := os.Stat(filepath.Join(all, "batches")); !os.IsNotExist(err) {
		t.Errorf("batches/ at the top with --ranks: %v", err)
	}
	var single struct {
		Train budget `json:"train"`
	}
	readJSON(t, filepath.Join(one, "info.json"), &single)
	for r := range 3 {
		dir := filepath.Join(all, "rank", string(rune('0'+r)))
		var info struct {
			Rank  int    `json:"rank"`
			Train budget `json:"train"`
			Val   *budget
		}
		readJSON(t, filepath.Join(dir, "info.json"), &info)
		// ⌈7/3⌉ = 3 for every rank: ranks 1 and 2 take their last batch
		// from the next epoch.
		if info.Rank != r || info.Train.NumBatches != 3 {
			t.Errorf("rank/%d/info.json: rank %d, %d batches; want rank %d, 3 batches", r, info.Rank, info.Train.NumBatches, r)
		}
		// One --mem for all: each rank's batch budget is a third of what a
		// daemon of its own gets.
		if b := info.Train.BudgetBytes; b*3 > single.Train.BudgetBytes || b*3 < single.Train.BudgetBytes-3 {
			t.Errorf("rank %d's batch budget is %d bytes, want a third of a lone daemon's %d", r, b, single.Train.BudgetBytes)
		}
		ents, err := os.ReadDir(filepath.Join(dir, "batches"))
		if err != nil || len(ents) != 6 {
			t.Errorf("rank/%d/batches lists %d entries (%v), want 3 .npy + 3 .json", r, len(ents), err)
		}
		if _, err := os.Stat(filepath.Join(dir, "val", "batches", "000000.npy")); err != nil {
			t.Errorf("rank/%d/val: %v", r, err)
		}
	}
	got := hashBatches(t, filepath.Join(all, "rank", "1"), "batches", 3, 2, 1)
	want := hashBatches(t, one, "batches", 3, 2, 2)
	if !slices.Equal(got, want) {
		t.Errorf("rank/1 of the shared daemon differs from a --rank 1 daemon:\n%v\n%v", got, want)
	}
	gotVal := hashBatches(t, filepath.Join(all, "rank", "1"), "val/batches", 1, 1, 0)
	wantVal := hashBatches(t, one, "val/batches", 1, 1, 0)
	if !slices.Equal(gotVal, wantVal) {
		t.Errorf("rank/1/val differs from a --rank 1 daemon's val")
	}
	other := hashBatches(t, filepath.Join(all, "rank", "2"), "batches", 3, 1, 0)
	if slices.Equal(other, got) {
		t.Errorf("ranks 1 and 2 serve the same batches")
	}

	var stats struct {
		Train struct {
			Requests int64 `json:"requests"`
		} `json:"train"`
	}
	readJSON(t, filepath.Join(all, "rank", "1", "stats.json"), &stats)
	if stats.Train.Requests == 0 {
		t.Errorf("rank/1/stats.json counts no train requests after reads")
	}
	var topStats struct {
		Ranks map[string]struct {
			Train *struct{} `json:"train"`
		} `json:"ranks"`
	}
	readJSON(t, filepath.Join(all, "stats.json"), &topStats)
	if len(topStats.Ranks) != 3 || topStats.Ranks["2"].Train == nil {
		t.Errorf("stats.json ranks: %+v, want the views of ranks 0, 1, 2", topStats.Ranks)
	}
}

func TestMountRanksRefused(t *testing.T) {
	cfg := writeMix(t, "batch_size: 4\nimage_size: [32, 32]\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--world", "3", "--ranks", "0-3"}, "--ranks 0-3 --world 3: rank 3 is not in 0..2"},
		{[]string{"--world", "8", "--ranks", "0-3,2"}, "rank 2 is listed twice"},
		{[]string{"--world", "8", "--ranks", "3-1"}, `"3-1" is not a rank or a range such as 0-7`},
		{[]string{"--world", "4", "--rank", "1", "--ranks", "0-1"}, "--rank 1 --ranks 0-1: give one"},
		{[]string{"--world", "2", "--rank", "5"}, "--rank 5 --world 2: the rank must be in 0..1"},
	} {
		args := append([]string{"mount", t.TempDir(), "--config", cfg, "--cache-dir", t.TempDir()}, tc.args...)
		out, code := runRefused(t, args...)
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, stderr\n%s\nwant it to say %q", tc.args, code, out, tc.want)
		}
	}
}
