package mix

import (
	"math/bits"

	"github.com/oxefs/oxefs/cache"
)

// Sample is one planned sample of a batch.
type Sample struct {
	// Dataset indexes the plan's datasets (config order, after datasets with
	// weight ≤ 0 are dropped). The train and val plans of one Mix use the
	// same indices.
	Dataset int
	// Episode is the record that holds the episode.
	Episode cache.Ref
	// Unit is j < samples_per_episode, or the frame t itself when
	// samples_per_episode is 0 (every valid pair is a unit).
	Unit int
	// Epoch is the dataset-epoch this sample belongs to.
	Epoch int64
	// Key is the keyed hash of (seed, dataset, episode, unit, epoch) from
	// which every random choice for the sample is drawn (t, offset), with
	// Draw. Substitutes carry their own key.
	Key uint64
	// Index is the sample's number in its dataset's stream: it is the
	// dataset's Index-th sample since batch 0, at position Index mod units
	// of epoch Index / units.
	Index int64
	// Attempt is 0 for a planned sample and a for the a-th substitute
	// (Plan.Substitutes).
	Attempt int
}

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
	h := hashInit(seed)
	for _, p := range parts {
		h = hashPart(h, p)
	}
	return h
}

// hashInit and hashPart are Hash split in steps, so that a prefix shared by
// many keys is hashed once: Hash(s, a, b) == hashPart(hashPart(hashInit(s), a), b).
func hashInit(seed uint64) uint64 { return mix64(seed ^ 0x9e3779b97f4a7c15) }

func hashPart(h, p uint64) uint64 { return mix64(h ^ mix64(p+0x9e3779b97f4a7c15)) }

// stringKey hashes a string (a dataset name, a split) to a 64-bit value for
// Hash: FNV-1a over its bytes, then a splitmix64 finalisation.
func stringKey(s string) uint64 {
	h := uint64(0xcbf29ce484222325)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 0x100000001b3
	}
	return mix64(h)
}

// Draw returns a number uniform in [0, n) for one stream of a key. n must be
// positive.
func Draw(key, stream uint64, n int) int {
	if n <= 0 {
		panic("mix.Draw: n must be positive")
	}
	return int(below(mix64(key^mix64(stream)), uint64(n)))
}

// below maps a uniform 64-bit value to [0, n) with Lemire's multiply-shift:
// unbiased enough for n ≪ 2^64 (bias < n/2^64).
func below(h, n uint64) uint64 {
	hi, _ := mulhi(h, n)
	return hi
}

func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func mulhi(a, b uint64) (hi, lo uint64) { return bits.Mul64(a, b) }
