package loader

import (
	"fmt"
	"strings"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/internal/bytesize"
)

// checkMem refuses a --mem that cannot hold one batch of each view of each
// of ranks ranks, as Open shares the budget out (see batchShare), before
// anything is opened. The message names the unit, the batch and the
// smallest --mem that works.
func checkMem(cfg *config.Config, mem int64, ranks int) error {
	ranks = max(ranks, 1)
	shape := kindOf(cfg).batchShape()
	size := int64(1)
	for _, d := range shape {
		size *= int64(d)
	}
	hasVal := false
	for _, d := range cfg.Datasets {
		hasVal = hasVal || (d.Sampled() && d.ValSplit != "")
	}
	if fits(mem, size, hasVal, ranks) {
		return nil
	}
	// The smallest --mem whose shares, rounded as Open rounds them, hold a
	// batch: about 2 batches, or 8 with a val view (which gets a quarter of
	// the half).
	need := 2 * size * int64(ranks)
	share := "half of --mem"
	if hasVal {
		need *= 4
		share = "half of --mem, and the val view a quarter of that"
	}
	if ranks > 1 {
		share += fmt.Sprintf(", shared by %d ranks", ranks)
	}
	for !fits(need, size, hasVal, ranks) {
		need++
	}
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	return fmt.Errorf("--mem %s is too small: one batch of %s is %s and batches get %s; use --mem ≥ %s, or lower batch_size / image_size",
		bytesize.Format(mem), strings.Join(dims, "×"), bytesize.Format(size), share, bytesize.Format(need))
}

// fits reports whether mem, shared out as Open does, holds a batch of size
// bytes in each view of each rank and leaves the RAM cache a positive
// budget.
func fits(mem, size int64, hasVal bool, ranks int) bool {
	budget := int64(float64(mem)*batchShare) / int64(ranks)
	train, val := budget, int64(0)
	if hasVal {
		val = budget / 4
		train -= val
	}
	return int64(float64(mem)*ramShare) > 0 && train >= size && (!hasVal || val >= size)
}
