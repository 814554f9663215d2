package mix

import "testing"

// TestHashStable pins Hash and Draw: plan and decode on every machine and
// every version must agree on them.
func TestHashStable(t *testing.T) {
	for _, c := range []struct {
		got, want uint64
	}{
		{Hash(0), 0xe220a8397b1dcdaf},
		{Hash(1, 2, 3), 0x942d0f5b16b78c39},
		{Hash(42, 7, 1<<40, 0xffffffffffffffff), 0xc110dd4928fa6f7},
		{uint64(Draw(Hash(1, 2, 3), StreamT, 100)), 94},
		{uint64(Draw(Hash(9), StreamOffset, 7)), 5},
		{uint64(Draw(0xdeadbeef, 3, 1000003)), 115676},
		{hashPart(hashPart(hashInit(5), 6), 7), Hash(5, 6, 7)},
	} {
		if c.got != c.want {
			t.Errorf("got %#x, want %#x", c.got, c.want)
		}
	}
}

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
			f := newFeistel(n, Hash(99, k))
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
