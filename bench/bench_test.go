package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// listedSource is a view that lists listed batches and serves every index
// up to maxBatch, as a train view serves later epochs by name; with val
// set it is a val view, whose one pass is all it serves.
type listedSource struct {
	listed, maxBatch int64
	val              bool
}

func (s listedSource) Name() string { return "mount test" }

func (s listedSource) Info() []byte {
	view := fmt.Sprintf(`{"num_batches": %d, "max_batch": %d, "plan": {"datasets": [{"name": "a", "weight": 1}]}}`, s.listed, s.maxBatch)
	info := fmt.Sprintf(`{"num_batches": %d, "batch_size": 2, "train": %s, "val": null}`, s.listed, view)
	if s.val {
		info = fmt.Sprintf(`{"num_batches": 1000, "batch_size": 2, "train": {"num_batches": 1000, "max_batch": 99999}, "val": %s}`, view)
	}
	return viewInfo([]byte(info), s.val)
}

func (s listedSource) Read(ctx context.Context, n int64, buf []byte) ([]byte, []byte, error) {
	if n > s.maxBatch {
		return buf, nil, fmt.Errorf("batch %d: %w", n, os.ErrNotExist)
	}
	return append(buf[:0], byte(n)), []byte(`{"dataset_name": ["a", "a"]}`), nil
}

func (s listedSource) Stats() []byte { return []byte(`{}`) }
func (s listedSource) CPU() CPU      { return CPU{} }

// TestRunPastTheListing: a train view that lists fewer batches than a run
// reads still serves the later ones (the next epochs), so the run reads
// them, the defaults (5 + 50) included; a run past what a view serves (a
// val view is one pass) is refused before any read, with a message that
// names what the view serves and the flags that fit it.
func TestRunPastTheListing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		src     listedSource
		opts    Options
		wantErr []string
	}{
		{"defaults on a train view listing 3", listedSource{listed: 3, maxBatch: 1 << 40}, Options{Readers: 4, Warmup: 5, Batches: 50}, nil},
		{"up to max_batch exactly", listedSource{listed: 3, maxBatch: 59}, Options{Readers: 2, Warmup: 5, Batches: 50, Start: 5}, nil},
		{"past max_batch", listedSource{listed: 3, maxBatch: 58}, Options{Readers: 2, Warmup: 5, Batches: 50, Start: 5},
			[]string{"serves batches 0..58", "--start 5 + --warmup 5 + --batches 50", "--batches 49"}},
		{"defaults on a val view listing 3", listedSource{listed: 3, maxBatch: 2, val: true}, Options{Readers: 4, Warmup: 5, Batches: 50},
			[]string{"serves batches 0..2", "lists 3", "--warmup 0 --batches 3"}},
		{"start past a val view", listedSource{listed: 3, maxBatch: 2, val: true}, Options{Readers: 1, Batches: 1, Start: 3},
			[]string{"serves batches 0..2", "--start 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(context.Background(), tc.src, tc.opts)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("ran %d batches, want an error", len(res.Records))
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			total := tc.opts.Warmup + tc.opts.Batches
			seen := map[int64]bool{}
			for _, r := range res.Records {
				seen[r.Index] = true
			}
			if int64(len(res.Records)) != total || len(seen) != int(total) {
				t.Fatalf("%d records of %d batches, want %d", len(res.Records), len(seen), total)
			}
			for n := tc.opts.Start; n < tc.opts.Start+total; n++ {
				if !seen[n] {
					t.Fatalf("batch %d was not read", n)
				}
			}
			if s := res.Summarise(); s.Batches != tc.opts.Batches {
				t.Errorf("summary of %d batches, want %d", s.Batches, tc.opts.Batches)
			}
		})
	}
}
