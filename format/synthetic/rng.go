package synthetic

import (
	"math"
	"math/bits"
)

// rng is a splitmix64 stream. It is tiny, fast, and the same on every
// platform and Go version, which math/rand does not promise for its
// derived draws; every random choice synth makes goes through it, so the
// output is a function of the seed alone.
type rng struct{ s uint64 }

// newRNG returns a stream keyed by any number of values: the seed, the
// dataset, the split, the episode, the camera. Streams with different keys
// are independent.
func newRNG(parts ...uint64) *rng {
	h := uint64(0x6a09e667f3bcc909)
	for _, p := range parts {
		h = mix64(h ^ mix64(p+0x9e3779b97f4a7c15))
	}
	return &rng{s: h}
}

// hashString folds a name into a key part.
func hashString(s string) uint64 {
	h := uint64(0xcbf29ce484222325) // FNV-1a
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 0x100000001b3
	}
	return h
}

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// float returns a number uniform in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// between returns a number uniform in [lo, hi).
func (r *rng) between(lo, hi float64) float64 { return lo + (hi-lo)*r.float() }

// intn returns a number uniform in [0, n); n must be positive.
func (r *rng) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// span returns an integer uniform in [lo, hi].
func (r *rng) span(lo, hi int) int { return lo + r.intn(hi-lo+1) }

// normal returns a standard normal draw (Box–Muller, one value per call).
func (r *rng) normal() float64 {
	u := 1 - r.float() // (0, 1]
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*r.float())
}
