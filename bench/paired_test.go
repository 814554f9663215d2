package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// clock is a processor clock that only reads move: each read of a
// costSource advances it by that source's cost for the batch.
type clock struct{ now time.Duration }

// costSource serves every batch up to last; reading batch n costs
// cost(n) on the shared clock and is logged as name:n.
type costSource struct {
	name string
	last int64
	cost func(n int64) time.Duration
	c    *clock
	log  *[]string
	fail int64 // a read of this batch fails (−1: none)
}

func (s costSource) Name() string { return s.name }
func (s costSource) Info() []byte {
	return []byte(fmt.Sprintf(`{"num_batches": %d, "batch_size": 4, "train": {"num_batches": %d}}`, s.last+1, s.last+1))
}
func (s costSource) Stats() []byte { return []byte(`{}`) }
func (s costSource) CPU() CPU      { return CPU{Pipeline: s.c.now} }

func (s costSource) Read(ctx context.Context, n int64, buf []byte) ([]byte, []byte, error) {
	if n == s.fail {
		return buf, nil, errors.New("broken shard")
	}
	*s.log = append(*s.log, fmt.Sprintf("%s:%d", s.name, n))
	s.c.now += s.cost(n)
	return append(buf[:0], byte(n)), nil, nil
}

// TestPairedRun: each batch is read from both sources, which one first
// alternating; each read's processor time goes to its own source, the
// warm-up is not counted, and the summary's per-sample times and
// ratios follow from them.
func TestPairedRun(t *testing.T) {
	var (
		c   clock
		log []string
	)
	// A costs 3 ms a batch, 6 ms on odd batches; B always 2 ms.
	a := costSource{name: "a", last: 99, c: &c, log: &log, fail: -1, cost: func(n int64) time.Duration {
		return time.Duration(3+3*(n%2)) * time.Millisecond
	}}
	b := costSource{name: "b", last: 99, c: &c, log: &log, fail: -1, cost: func(int64) time.Duration { return 2 * time.Millisecond }}
	progress := 0
	res, err := Paired{A: a, B: b}.Run(context.Background(), Options{Warmup: 2, Batches: 5, Start: 10, Progress: func() { progress++ }})
	if err != nil {
		t.Fatal(err)
	}
	want := "a:10 b:10 b:11 a:11 a:12 b:12 b:13 a:13 a:14 b:14 b:15 a:15 a:16 b:16"
	if got := strings.Join(log, " "); got != want {
		t.Errorf("reads %s, want %s", got, want)
	}
	if progress != 7 {
		t.Errorf("progress called %d times, want 7 (once a batch)", progress)
	}
	if fmt.Sprint(res.Indices) != "[12 13 14 15 16]" {
		t.Errorf("measured batches %v, want 12..16", res.Indices)
	}
	for i, n := range res.Indices {
		if res.CPUA[i] != a.cost(n) || res.CPUB[i] != b.cost(n) {
			t.Errorf("batch %d: CPU %v and %v, want %v and %v", n, res.CPUA[i], res.CPUB[i], a.cost(n), b.cost(n))
		}
	}
	s := res.Summarise()
	// A: 3+6+3+6+3 = 21 ms, B: 10 ms over 5 batches of 4 samples.
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"A ms per sample", s.AMsPerSample, 21.0 / 20},
		{"B ms per sample", s.BMsPerSample, 10.0 / 20},
		{"ratio", s.Ratio, 2.1},
		{"batch median", s.BatchMedian, 1.5},
		{"batch min", s.BatchMin, 1.5},
		{"batch max", s.BatchMax, 3},
	} {
		if math.Abs(f.got-f.want) > 1e-9 {
			t.Errorf("%s %v, want %v", f.name, f.got, f.want)
		}
	}
	if s.Batches != 5 || s.Samples != 20 {
		t.Errorf("%d batches, %d samples; want 5 and 20", s.Batches, s.Samples)
	}
}

// TestPairedErrors: a run past what the view serves is refused before
// any read, naming the flags that fit; a read that fails stops the run
// with the source and the batch in the error.
func TestPairedErrors(t *testing.T) {
	var (
		c   clock
		log []string
	)
	cost := func(int64) time.Duration { return time.Millisecond }
	a := costSource{name: "a", last: 9, c: &c, log: &log, fail: -1, cost: cost}
	b := costSource{name: "b", last: 9, c: &c, log: &log, fail: 3, cost: cost}
	_, err := Paired{A: a, B: b}.Run(context.Background(), Options{Warmup: 5, Batches: 6})
	if err == nil || !strings.Contains(err.Error(), "serves batches 0..9") || !strings.Contains(err.Error(), "--batches 5") {
		t.Errorf("a run past the view: error %v, want one naming batches 0..9 and --batches 5", err)
	}
	if len(log) != 0 {
		t.Errorf("reads %v before refusing the run, want none", log)
	}
	_, err = Paired{A: a, B: b}.Run(context.Background(), Options{Batches: 6})
	if err == nil || !strings.Contains(err.Error(), "b: batch 3: broken shard") {
		t.Errorf("a failing read: error %v, want one naming b and batch 3", err)
	}
	if _, err := (Paired{A: a, B: b}).Run(context.Background(), Options{Batches: 0}); err == nil {
		t.Error("--batches 0: no error")
	}
}
