package plan

import (
	"testing"

	"github.com/oxefs/oxefs/keyed"
)

func TestFeistelIsAPermutation(t *testing.T) {
	check := func(n uint64, key uint64) {
		t.Helper()
		f := newFeistel(n, key)
		seen := make([]bool, n)
		for x := range n {
			y := f.at(x)
			if y >= n || seen[y] {
				t.Fatalf("n=%d key=%#x: %d → %d, out of range or repeated", n, key, x, y)
			}
			seen[y] = true
		}
	}
	for n := uint64(1); n <= 600; n++ {
		for _, key := range []uint64{0, 1, 0xdeadbeef} {
			check(n, key)
		}
	}
	for k := 10; k <= 20; k++ {
		for _, n := range []uint64{1<<k - 1, 1 << k, 1<<k + 1} {
			check(n, uint64(k))
		}
	}
	check(1_000_003, 7)
}

// TestFeistelMixes is a loose uniformity check: where 0 lands, over many
// keys, is close to uniform.
func TestFeistelMixes(t *testing.T) {
	for _, n := range []uint64{2, 3, 10, 37} {
		const keys = 40_000
		counts := make([]int, n)
		for k := range uint64(keys) {
			f := newFeistel(n, keyed.Hash(99, k))
			counts[f.at(0)]++
		}
		want := float64(keys) / float64(n)
		for i, c := range counts {
			if d := float64(c) - want; d*d > 36*want { // 6 standard deviations
				t.Fatalf("n=%d: 0 lands on %d %d times, want about %.0f", n, i, c, want)
			}
		}
	}
}
