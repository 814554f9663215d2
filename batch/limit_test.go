package batch

import (
	"bytes"
	"context"
	"errors"
	iofs "io/fs"
	"testing"
)

// TestSchedulerLimit: Get serves indices past Len up to Limit (the train
// view's later epochs) and none beyond; readahead from inside the listing
// stays inside it, readahead from past it goes on.
func TestSchedulerLimit(t *testing.T) {
	for _, tc := range []struct {
		name         string
		limit        int64
		served, gone []int64
	}{
		{"one pass", 0, []int64{0, 3}, []int64{-1, 4, 5}},
		{"limit below len", 2, []int64{0, 3}, []int64{4}},
		{"beyond the listing", 100, []int64{0, 3, 4, 99}, []int64{100, 1 << 40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &testBuild{counts: map[int64]int{}}
			s, err := NewScheduler(Config{Len: 4, Limit: tc.limit, Shape: []int{8}, Build: b.build, Budget: 1 << 20, Readahead: 3})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, n := range tc.served {
				got, err := s.Get(context.Background(), n)
				if err != nil {
					t.Fatalf("Get(%d): %v", n, err)
				}
				if !bytes.Equal(got.Frames(), pattern(n, 8)) {
					t.Fatalf("Get(%d): wrong bytes", n)
				}
				got.Release()
			}
			for _, n := range tc.gone {
				if _, err := s.Get(context.Background(), n); !errors.Is(err, iofs.ErrNotExist) {
					t.Fatalf("Get(%d): %v, want ErrNotExist", n, err)
				}
			}
		})
	}
	b := &testBuild{counts: map[int64]int{}}
	s, err := NewScheduler(Config{Len: 4, Limit: 100, Shape: []int{8}, Build: b.build, Budget: 1 << 20, Readahead: 3})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	got.Release()
	if got, err = s.Get(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	got.Release()
	s.Close() // waits for readahead builds
	for n := range b.counts {
		if n >= 4 && n < 10 {
			t.Errorf("reading batch 3 of 4 listed read ahead batch %d past the listing", n)
		}
	}
	for _, n := range []int64{11, 12, 13} {
		if b.counts[n] != 1 {
			t.Errorf("reading batch 10 past the listing: batch %d built %d times, want 1 (readahead)", n, b.counts[n])
		}
	}
}
