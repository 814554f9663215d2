package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestMountManyReadersTightMemory: 64 concurrent readers, each reading a
// whole batch file, at a --mem whose batch budget holds only 4 batches.
// Open files pin their batch and admission waits for memory in order, so
// every reader finishes and each batch is built about once (before, each
// read call could evict another reader's half-read batch, and batches were
// rebuilt thousands of times). Three rounds of 64 distinct batches.
func TestMountManyReadersTightMemory(t *testing.T) {
	testkit.RequireFUSE(t)
	src, _ := filepath.Abs("testdata/datasets/tiny_bridge/1.0.0")
	cfg := filepath.Join(t.TempDir(), "mix.yaml")
	// 64 x 2 x 256 x 256 x 3 = 25.2 MB per batch; no val view, so the
	// batch budget is half of --mem: 104 MiB, 4 batches.
	yaml := "batch_size: 64\nimage_size: [256, 256]\nnum_batches: 256\ndatasets:\n  - source: " + src +
		"\n    image_key: steps/observation/image\n    action_keys: [steps/action/world_vector]\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d := startMount(t, dir, nil, "--config", cfg, "--cache-dir", t.TempDir(), "--mem", "208MiB")
	var info struct {
		Memory struct {
			BatchBytes      int64  `json:"batch_bytes"`
			BatchBudget     int64  `json:"batch_budget_bytes"`
			MaxOpen         int64  `json:"max_concurrent_open_batches"`
			PerReader       int64  `json:"min_mem_bytes_per_reader"`
			MinMem          int64  `json:"min_mem_bytes"`
			MaxReaders      int64  `json:"max_concurrent_readers"`
			BudgetBytes     int64  `json:"budget_bytes"`
			MinMemRuleGiven string `json:"min_mem_rule"`
		} `json:"memory"`
		Train struct {
			NPYBytes int64 `json:"npy_bytes"`
		} `json:"train"`
	}
	readJSON(t, filepath.Join(dir, "info.json"), &info)
	m := info.Memory
	if m.BatchBytes != 64*2*256*256*3 || m.BatchBudget != 104<<20 || m.MaxOpen != 4 || m.MaxReaders != 3 ||
		m.PerReader != 48<<20 || m.MinMem != 96<<20 || m.MinMemRuleGiven == "" {
		t.Fatalf("info.json memory: %+v", m)
	}

	const readers, rounds = 64, 3
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, readers)
		start := time.Now()
		for r := range readers {
			n := round*readers + r
			wg.Add(1)
			go func() {
				defer wg.Done()
				b, err := os.ReadFile(filepath.Join(dir, "batches", fmt.Sprintf("%06d.npy", n)))
				if err == nil && int64(len(b)) != info.Train.NPYBytes {
					err = fmt.Errorf("batch %d: %d bytes", n, len(b))
				}
				if err != nil {
					errs <- err
				}
			}()
		}
		done := make(chan struct{})
		go func() {
			wg.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			var stats struct {
				Train struct{ Builds int64 } `json:"train"`
			}
			readJSON(t, filepath.Join(dir, "stats.json"), &stats)
			d.cmd.Process.Kill() // unblocks the readers
			<-done
			syscall.Unmount(dir, syscall.MNT_DETACH) // the dead daemon's mount
			t.Fatalf("round %d: %d readers did not finish within 90s; %d builds for %d batches",
				round, readers, stats.Train.Builds, (round+1)*readers)
		}
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		t.Logf("round %d: %d readers in %v", round, readers, time.Since(start).Round(time.Millisecond))
	}
	var stats struct {
		Train struct {
			Builds, Evictions int64
			MemoryWaits       int64 `json:"memory_waits"`
			Held              int64 `json:"held_bytes"`
		} `json:"train"`
	}
	readJSON(t, filepath.Join(dir, "stats.json"), &stats)
	t.Logf("%d builds, %d evictions, %d memory waits for %d batches", stats.Train.Builds, stats.Train.Evictions,
		stats.Train.MemoryWaits, rounds*readers)
	if stats.Train.Builds > 2*rounds*readers {
		t.Fatalf("%d builds for %d batches read: batches were rebuilt", stats.Train.Builds, rounds*readers)
	}
	if stats.Train.Held > m.BatchBudget {
		t.Fatalf("held %d bytes, budget %d", stats.Train.Held, m.BatchBudget)
	}
}
