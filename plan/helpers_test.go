package plan

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/big"
	"testing"

	"github.com/oxefs/oxefs/config"
)

// shapeOfShards builds a dataset whose split "train" has shards of the given
// numbers of episodes, all selected.
func shapeOfShards(name string, w config.Weight, perShard []int) DatasetShape {
	s := DatasetShape{Name: name, Split: "train", Weight: w}
	for i, n := range perShard {
		s.Segments = append(s.Segments, Segment{Split: "train", Shard: i, Count: n})
	}
	return s
}

func repeat(n, v int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func mustPlan(t testing.TB, opts Options, shapes []DatasetShape) *Plan {
	t.Helper()
	p, err := New(opts, shapes)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// unitID identifies a sample unit independently of the plan's internals.
type unitID struct {
	split         string
	shard, record int
	unit          int
}

func idOf(s Sample) unitID {
	return unitID{s.Episode.Split, s.Episode.Shard, s.Episode.Record, s.Unit}
}

// batchHash hashes every field of batches [from, to).
func batchHash(p *Plan, from, to int64) string {
	h := sha256.New()
	var buf []Sample
	var b [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	for n := from; n < to; n++ {
		buf = p.Batch(n, buf)
		for _, s := range buf {
			put(uint64(s.Dataset))
			h.Write([]byte(s.Episode.Split))
			put(uint64(s.Episode.Shard))
			put(uint64(s.Episode.Record))
			put(uint64(s.Unit))
			put(uint64(s.Epoch))
			put(s.Key)
			put(uint64(s.Index))
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// share is B·w as an exact fraction num/den with small numbers.
type share struct{ num, den int64 }

func sharesOf(t testing.TB, p *Plan) []share {
	t.Helper()
	var out []share
	for _, w := range p.Weights() {
		bw := new(big.Rat).Mul(w, big.NewRat(int64(p.BatchSize()), 1))
		if !bw.Num().IsInt64() || !bw.Denom().IsInt64() || bw.Denom().Int64() > 1<<20 {
			t.Fatalf("planned share %s is not a small fraction", bw.RatString())
		}
		out = append(out, share{bw.Num().Int64(), bw.Denom().Int64()})
	}
	return out
}

// within1 reports |count − n·num/den| < 1, exactly, for any n.
func within1(count, n int64, s share) bool {
	const small = 1 << 31
	if count >= 0 && count < small && n >= 0 && n < small && s.num < small && s.den < small {
		lag := count*s.den - n*s.num
		return lag > -s.den && lag < s.den
	}
	lag := new(big.Int).Mul(big.NewInt(count), big.NewInt(s.den))
	lag.Sub(lag, new(big.Int).Mul(big.NewInt(n), big.NewInt(s.num)))
	lag.Abs(lag)
	return lag.Cmp(big.NewInt(s.den)) < 0
}
