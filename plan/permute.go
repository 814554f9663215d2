package plan

import (
	"math/bits"

	"github.com/oxefs/oxefs/keyed"
)

// feistelRounds is the number of Feistel rounds. Four rounds of a strong
// round function make a pseudo-random permutation (Luby–Rackoff); the round
// function here is a full-avalanche 64-bit mixer.
const feistelRounds = 4

// feistel is a keyed pseudo-random permutation of [0, n): a Feistel
// network on the smallest power of two ≥ n (halves of ⌊b/2⌋ and ⌈b/2⌉
// bits, which need not be equal), restricted to [0, n) by cycle-walking:
// a value that lands outside [0, n) is permuted again until it lands
// inside. Because the network is a bijection of [0, 2^b), the walk ends
// and the restriction is a bijection of [0, n). 2^b < 2n, so a walk takes
// fewer than two rounds of the network on average.
type feistel struct {
	n            uint64
	lbits, rbits uint // widths of the halves at the input
	keys         [feistelRounds]uint64
}

func newFeistel(n, key uint64) feistel {
	f := feistel{n: n}
	if n <= 1 {
		return f
	}
	b := uint(bits.Len64(n - 1))
	f.lbits = b / 2
	f.rbits = b - f.lbits
	for i := range f.keys {
		key = keyed.Mix64(key + 0x9e3779b97f4a7c15)
		f.keys[i] = key
	}
	return f
}

// at returns the image of x, which must be in [0, n).
func (f *feistel) at(x uint64) uint64 {
	if f.n <= 1 {
		return 0
	}
	for {
		x = f.round(x)
		if x < f.n {
			return x
		}
	}
}

// round applies the network once. Each round maps (l, r), with l of lb
// bits and r of rb bits, to (r, l ⊕ F(r)) — the halves swap widths — and
// the fourth round brings the widths back.
func (f *feistel) round(x uint64) uint64 {
	lb, rb := f.lbits, f.rbits
	ml, mr := uint64(1)<<lb-1, uint64(1)<<rb-1
	l, r := x>>rb, x&mr
	l, r = r, (l^roundF(r, f.keys[0]))&ml // l: rb bits, r: lb bits
	l, r = r, (l^roundF(r, f.keys[1]))&mr // l: lb bits, r: rb bits
	l, r = r, (l^roundF(r, f.keys[2]))&ml
	l, r = r, (l^roundF(r, f.keys[3]))&mr
	return l<<rb | r
}

// roundF is the round function: splitmix64's finaliser of the keyed
// input, so that every output bit depends on every bit of r and the key.
// (Half of it is measurably biased on 1-bit halves; see TestFeistelMixes.)
func roundF(r, k uint64) uint64 { return keyed.Mix64(r ^ k) }
