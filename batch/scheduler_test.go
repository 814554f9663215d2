package batch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/oxefs/oxefs/internal/npy"
	iofs "io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/oxefs/oxefs/internal/pythontest"
)

// testBuild fills batch n with a pattern and counts builds per batch. If
// gate is set, builds wait on it.
type testBuild struct {
	mu     sync.Mutex
	counts map[int64]int
	gate   chan struct{}
	fail   map[int64]int // batch -> builds that fail first
	s      *Scheduler
	over   atomic.Bool // held exceeded the budget during a build
}

func (b *testBuild) build(ctx context.Context, n int64, frames []byte) ([]byte, error) {
	if b.s != nil && b.s.Held() > b.s.cfg.Budget {
		b.over.Store(true)
	}
	if b.gate != nil {
		select {
		case <-b.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	b.mu.Lock()
	b.counts[n]++
	failing := b.fail[n] > 0
	if failing {
		b.fail[n]--
	}
	b.mu.Unlock()
	if failing {
		return nil, fmt.Errorf("batch %d: source unavailable", n)
	}
	for i := range frames {
		frames[i] = byte(int64(i)*3 + n)
	}
	return fmt.Appendf(nil, `{"batch":%d}`, n), nil
}

func pattern(n int64, size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(int64(i)*3 + n)
	}
	return b
}

func newTest(t *testing.T, cfg Config) (*Scheduler, *testBuild) {
	t.Helper()
	tb := &testBuild{counts: map[int64]int{}, fail: map[int64]int{}}
	cfg.Build = tb.build
	if cfg.Shape == nil {
		cfg.Shape = []int{4, 2, 8, 8, 3}
	}
	s, err := NewScheduler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tb.s = s
	t.Cleanup(s.Close)
	return s, tb
}

func TestOneBuildPerBatch(t *testing.T) {
	s, tb := newTest(t, Config{Len: 10, Budget: 1 << 20})
	tb.gate = make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := s.Get(context.Background(), 3)
			if err != nil {
				errs <- err
				return
			}
			defer b.Release()
			if !bytes.Equal(b.Frames(), pattern(3, int(s.size))) || string(b.Meta()) != `{"batch":3}` {
				errs <- errors.New("wrong content")
			}
		}()
	}
	close(tb.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if c := tb.counts[3]; c != 1 {
		t.Fatalf("batch 3 built %d times for 16 concurrent readers", c)
	}
}

func TestOutOfRange(t *testing.T) {
	s, _ := newTest(t, Config{Len: 5, Budget: 1 << 20})
	for _, n := range []int64{-1, 5, 1 << 40} {
		if _, err := s.Get(context.Background(), n); !errors.Is(err, iofs.ErrNotExist) {
			t.Errorf("Get(%d) = %v, want ErrNotExist", n, err)
		}
	}
}

func TestBudgetTooSmall(t *testing.T) {
	_, err := NewScheduler(Config{Len: 1, Shape: []int{64, 2, 256, 256, 3}, Budget: 1 << 20, Build: (&testBuild{}).build})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("--mem")) {
		t.Fatalf("got %v, want an error naming --mem", err)
	}
}

// TestBudgetAndReadahead reads many batches in the patterns trainers use,
// with budgets from one batch to plenty, and checks that the bytes held
// never exceed the budget, every batch has the right content, and readahead
// serves the readers whenever memory allows it.
func TestBudgetAndReadahead(t *testing.T) {
	const total = 120
	for _, tc := range []struct {
		name      string
		budget    int // in batches
		readahead int
		readers   int // DataLoader workers: reader r reads r, r+W, r+2W, ...
		wantHits  bool
	}{
		{"sequential", 16, 4, 1, true},
		{"strided 4 workers", 24, 8, 4, true},
		{"tight budget", 2, 8, 1, false},
		{"one batch", 1, 4, 1, false},
		{"no readahead", 8, 0, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const size = 4 * 2 * 8 * 8 * 3 // newTest's default shape
			s, tb := newTest(t, Config{Len: total, Readahead: tc.readahead, Budget: int64(tc.budget) * size})
			// Readers advance in rounds, as DataLoader workers do when the
			// trainer consumes batches in order: worker r reads r, r+W, ...
			for round := int64(0); round*int64(tc.readers) < total; round++ {
				var wg sync.WaitGroup
				errs := make(chan error, tc.readers)
				for r := range int64(tc.readers) {
					n := round*int64(tc.readers) + r
					if n >= total {
						break
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						b, err := s.Get(context.Background(), n)
						if err != nil {
							errs <- err
							return
						}
						ok := bytes.Equal(b.Frames(), pattern(n, int(s.size)))
						b.Release()
						if !ok {
							errs <- fmt.Errorf("batch %d: wrong content", n)
						}
						if h := s.Held(); h > s.cfg.Budget {
							errs <- fmt.Errorf("held %d bytes, budget %d", h, s.cfg.Budget)
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
			}
			if tb.over.Load() {
				t.Fatal("held bytes exceeded the budget during a build")
			}
			hits := s.Stats.ReadaheadHits.Load()
			t.Logf("builds %d, readahead hits %d/%d, evictions %d, memory waits %d",
				s.Stats.Builds.Load(), hits, total, s.Stats.Evictions.Load(), s.Stats.MemoryWaits.Load())
			if tc.wantHits && hits < total/2 {
				t.Errorf("readahead served %d of %d reads", hits, total)
			}
			if tc.readahead == 0 && hits != 0 {
				t.Errorf("readahead hits %d with readahead off", hits)
			}
			// With room for the readahead window and a batch per reader,
			// nothing is evicted before it is read: each batch is built once.
			roomy := tc.budget >= tc.readahead+tc.readers+1
			for n := range int64(total) {
				if c := tb.counts[n]; c == 0 || (roomy && c != 1) {
					t.Fatalf("batch %d built %d times", n, c)
				}
			}
		})
	}
}

func TestCancelledWaiterDoesNotCancelBuild(t *testing.T) {
	s, tb := newTest(t, Config{Len: 4, Budget: 1 << 20})
	tb.gate = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := s.Get(ctx, 2)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	close(tb.gate)
	b, err := s.Get(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	if tb.counts[2] != 1 {
		t.Fatalf("batch built %d times; the abandoned build should have been reused", tb.counts[2])
	}
}

func TestFailedBuildIsRetried(t *testing.T) {
	s, tb := newTest(t, Config{Len: 4, Budget: 1 << 20})
	tb.fail[1] = 1
	if _, err := s.Get(context.Background(), 1); err == nil {
		t.Fatal("the failing build did not fail")
	}
	b, err := s.Get(context.Background(), 1)
	if err != nil {
		t.Fatalf("second request: %v", err)
	}
	b.Release()
	if tb.counts[1] != 2 {
		t.Fatalf("batch built %d times, want 2 (a failure is not kept)", tb.counts[1])
	}
	if held := s.Held(); held > s.cfg.Budget {
		t.Fatalf("held %d", held)
	}
}

func TestNPYHeader(t *testing.T) {
	for _, shape := range [][]int{{64, 2, 256, 256, 3}, {1, 3, 2, 48, 80}, {7}, {2, 3}} {
		h := npy.Header("|u1", shape)
		if len(h)%64 != 0 || !bytes.HasPrefix(h, []byte("\x93NUMPY\x01\x00")) || h[len(h)-1] != '\n' {
			t.Fatalf("%v: malformed header %q", shape, h)
		}
		if hl := int(h[8]) | int(h[9])<<8; hl != len(h)-10 {
			t.Fatalf("%v: header length field %d, want %d", shape, hl, len(h)-10)
		}
	}
	// numpy itself, where it is installed, must read it.
	py := pythontest.Find(t, "numpy")
	dir := t.TempDir()
	shape := []int{2, 3, 4, 5, 3}
	size := 2 * 3 * 4 * 5 * 3
	data := append(npy.Header("|u1", shape), pattern(0, size)...)
	path := filepath.Join(dir, "b.npy")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", `
import sys, numpy as np
a = np.load(sys.argv[1]); m = np.load(sys.argv[1], mmap_mode="r")
assert a.dtype == np.uint8 and a.shape == (2, 3, 4, 5, 3), (a.dtype, a.shape)
assert (a == m).all()
print(int(a.astype(np.int64).sum()))`, path).CombinedOutput()
	if err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	var sum int64
	for _, b := range pattern(0, size) {
		sum += int64(b)
	}
	if got := string(bytes.TrimSpace(out)); got != fmt.Sprint(sum) {
		t.Fatalf("numpy read sum %s, want %d", got, sum)
	}
}

// TestLookReadsNoFurther: a Get marked as a look builds the batch asked
// for and nothing after it; a plain Get reads ahead.
func TestLookReadsNoFurther(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		built []int64
	}{
		{"look", Look(context.Background()), []int64{5}},
		{"reader", context.Background(), []int64{5, 6, 7, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, tb := newTest(t, Config{Len: 20, Budget: 1 << 30, Readahead: 3})
			b, err := s.Get(tc.ctx, 5)
			if err != nil {
				t.Fatal(err)
			}
			b.Release()
			s.Close() // waits for the readahead builds
			tb.mu.Lock()
			defer tb.mu.Unlock()
			var built []int64
			for n := range int64(20) {
				if tb.counts[n] > 0 {
					built = append(built, n)
				}
			}
			if !slices.Equal(built, tc.built) {
				t.Errorf("built %v, want %v", built, tc.built)
			}
		})
	}
}

// TestSchedulerRecyclesReadBatches: a reader that reads each batch once, in
// order, with a budget of room for every batch, builds each once into
// memory that stays at the readahead window, the servedKept batches kept
// for a second read and its own; batches read once do not fill the budget
// with new buffers (each new one is a page fault per 4 KiB on its first
// build). The last batches read are still there for a second read.
func TestSchedulerRecyclesReadBatches(t *testing.T) {
	const total, ahead = 60, 2
	s, tb := newTest(t, Config{Len: total, Budget: 1 << 30, Readahead: ahead})
	limit := int64(servedKept+ahead+2) * s.size
	var peak int64
	for n := range int64(total) {
		b, err := s.Get(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Frames(), pattern(n, int(s.size))) {
			t.Fatalf("batch %d: wrong content", n)
		}
		b.Release()
		peak = max(peak, s.Held())
	}
	if peak > limit {
		t.Errorf("held %d buffers for a reader reading each batch once, want at most %d (readahead %d, %d kept read, 2)",
			peak/s.size, limit/s.size, ahead, servedKept)
	}
	for _, n := range []int64{total - 1, total - servedKept} {
		b, err := s.Get(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	s.Close() // waits for the readahead builds
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for n := range int64(total) {
		if tb.counts[n] != 1 {
			t.Errorf("batch %d built %d times, want 1 (read once, the last %d read twice)", n, tb.counts[n], servedKept)
		}
	}
}
