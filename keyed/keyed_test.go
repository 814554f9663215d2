package keyed

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
		{Part(Part(Init(5), 6), 7), Hash(5, 6, 7)},
		{uint64(Float(Hash(1, 2, 3), 9) * (1 << 53)), 0x10953bf3bececb},
	} {
		if c.got != c.want {
			t.Errorf("got %#x, want %#x", c.got, c.want)
		}
	}
}
