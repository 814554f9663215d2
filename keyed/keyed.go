// Package keyed holds the keyed hash from which every random choice of
// oxefs is drawn: the plan's permutations and shuffles and the assembler's
// choice of frame and offset. Both sides must agree on it bit for bit, on
// every machine, so it lives once, here. It imports nothing else of oxefs.
package keyed

import "math/bits"

// Random streams drawn from a sample's Key. Each choice has its own stream
// so that adding one never changes another.
const (
	StreamT      uint64 = 1 // the frame t (samples_per_episode ≥ 1)
	StreamOffset uint64 = 2 // the offset within a [min, max] range
)

// Hash mixes a seed and any number of values into one well-distributed
// 64-bit key (splitmix64 finalisation after each value). It is the only hash
// oxefs uses for random choices: plan and decode agree on it, and it is the
// same on every machine.
func Hash(seed uint64, parts ...uint64) uint64 {
	h := Init(seed)
	for _, p := range parts {
		h = Part(h, p)
	}
	return h
}

// Init and Part are Hash split in steps, so that a prefix shared by
// many keys is hashed once: Hash(s, a, b) == Part(Part(Init(s), a), b).
func Init(seed uint64) uint64 { return Mix64(seed ^ 0x9e3779b97f4a7c15) }

func Part(h, p uint64) uint64 { return Mix64(h ^ Mix64(p+0x9e3779b97f4a7c15)) }

// String hashes a string (a dataset name, a split) to a 64-bit value for
// Hash: FNV-1a over its bytes, then a splitmix64 finalisation.
func String(s string) uint64 {
	h := uint64(0xcbf29ce484222325)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 0x100000001b3
	}
	return Mix64(h)
}

// Draw returns a number uniform in [0, n) for one stream of a key. n must be
// positive.
func Draw(key, stream uint64, n int) int {
	if n <= 0 {
		panic("keyed.Draw: n must be positive")
	}
	return int(Below(Mix64(key^Mix64(stream)), uint64(n)))
}

// Below maps a uniform 64-bit value to [0, n) with Lemire's multiply-shift:
// unbiased enough for n ≪ 2^64 (bias < n/2^64).
func Below(h, n uint64) uint64 {
	hi, _ := bits.Mul64(h, n)
	return hi
}

// Mix64 is the splitmix64 finaliser: a bijection that spreads every input
// bit over the output.
func Mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Float returns a number uniform in [0, 1) for one stream of a key: the top
// 53 bits of the stream's hash, so every value is a multiple of 2^-53.
func Float(key, stream uint64) float64 {
	return float64(Mix64(key^Mix64(stream))>>11) / (1 << 53)
}
