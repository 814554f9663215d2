package plan

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/keyed"
)

// coverageCase is a mix whose dataset 0 is checked for coverage.
type coverageCase struct {
	name   string
	opts   Options
	shapes []DatasetShape
	// units lists dataset 0's units, computed from the shape alone.
	units []unitID
}

func coverageCases() []coverageCase {
	var cs []coverageCase

	// samples_per_episode 3, uneven shards.
	a := shapeOfShards("uneven", config.NewWeight(1, 1), []int{7, 3, 12, 5, 9, 1, 8})
	c := coverageCase{
		name:   "samples_per_episode 3",
		opts:   Options{Seed: 11, BatchSize: 16, SamplesPerEpisode: 3, WindowShards: 2},
		shapes: []DatasetShape{a, shapeOfShards("other", config.NewWeight(2, 1), repeat(10, 10))},
	}
	for _, sg := range a.Segments {
		for r := range sg.Count {
			for j := range 3 {
				c.units = append(c.units, unitID{"train", sg.Shard, sg.First + r, j})
			}
		}
	}
	cs = append(cs, c)

	// samples_per_episode 0: every valid pair; short and unreadable
	// episodes have none. A selection that starts mid-shard and spans two
	// splits.
	rng := rand.New(rand.NewPCG(5, 6))
	b := DatasetShape{Name: "pairs", Split: "train[5:]+val", Weight: config.NewWeight(1, 1), MinOffset: 3,
		Segments: []Segment{{Split: "train", Shard: 0, First: 5, Count: 15}, {Split: "train", Shard: 1, First: 0, Count: 20}, {Split: "train", Shard: 2, First: 0, Count: 7}, {Split: "val", Shard: 0, First: 0, Count: 6}, {Split: "val", Shard: 1, First: 0, Count: 4}}}
	c = coverageCase{
		name:   "samples_per_episode 0",
		opts:   Options{Seed: 12, BatchSize: 24, SamplesPerEpisode: 0, WindowShards: 2},
		shapes: []DatasetShape{b, {Name: "other", Weight: config.NewWeight(1, 1), MinOffset: 1, Segments: []Segment{{Split: "train", Shard: 0, First: 0, Count: 10}}, Lengths: repeat32(10, 30)}},
	}
	for _, sg := range b.Segments {
		for r := range sg.Count {
			L := int32(rng.IntN(40)) - 1 // -1: unreadable (one unit); 0..3: too short
			b.Lengths = append(b.Lengths, L)
			if L < 0 {
				c.units = append(c.units, unitID{sg.Split, sg.Shard, sg.First + r, 0})
			}
			for tt := 0; tt < int(L)-3; tt++ {
				c.units = append(c.units, unitID{sg.Split, sg.Shard, sg.First + r, tt})
			}
		}
	}
	c.shapes[0] = b
	cs = append(cs, c)

	// A tiny dataset with a large weight: many epochs per batch.
	tiny := shapeOfShards("tiny", config.NewWeight(5, 1), []int{3})
	cs = append(cs, coverageCase{
		name:   "tiny dataset, many epochs per batch",
		opts:   Options{Seed: 13, BatchSize: 64, SamplesPerEpisode: 1, WindowShards: 4},
		shapes: []DatasetShape{tiny, shapeOfShards("big", config.NewWeight(1, 1), repeat(40, 25))},
		units:  []unitID{{"train", 0, 0, 0}, {"train", 0, 1, 0}, {"train", 0, 2, 0}},
	})
	return cs
}

func repeat32(n int, v int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// samplesOf returns dataset d's first n samples, ordered by Index, read
// from the batches.
func samplesOf(p *Plan, d int, n int64) []Sample {
	out := make([]Sample, n)
	var got int64
	var buf []Sample
	for b := int64(0); got < n; b++ {
		buf = p.Batch(b, buf)
		for _, s := range buf {
			if s.Dataset == d && s.Index < n {
				out[s.Index] = s
				got++
			}
		}
	}
	return out
}

// TestCoverage proves property 2: within each dataset-epoch every unit
// appears exactly once, and epochs are differently ordered.
func TestCoverage(t *testing.T) {
	const epochs = 12
	for _, c := range coverageCases() {
		t.Run(c.name, func(t *testing.T) {
			p := mustPlan(t, c.opts, c.shapes)
			U := int64(len(c.units))
			if got := p.Info().Datasets[0].Units; got != U {
				t.Fatalf("plan counts %d units, the shape has %d", got, U)
			}
			all := samplesOf(p, 0, epochs*U)
			orders := make(map[string]bool)
			var prev []unitID
			for e := range int64(epochs) {
				ep := all[e*U : (e+1)*U]
				seen := make(map[unitID]int)
				var order []unitID
				for _, s := range ep {
					if s.Epoch != e {
						t.Fatalf("sample %d is in epoch %d, want %d", s.Index, s.Epoch, e)
					}
					seen[idOf(s)]++
					order = append(order, idOf(s))
				}
				for _, u := range c.units {
					if seen[u] != 1 {
						t.Fatalf("epoch %d: unit %+v appears %d times", e, u, seen[u])
					}
				}
				if len(seen) != len(c.units) {
					t.Fatalf("epoch %d: %d distinct units, want %d", e, len(seen), len(c.units))
				}
				if U > 20 && slices.Equal(order, prev) {
					t.Fatalf("epoch %d repeats the order of epoch %d", e, e-1)
				}
				orders[fmt.Sprint(order)] = true
				prev = order
			}
			if len(orders) < 2 {
				t.Fatalf("all %d epochs have the same order", epochs)
			}
		})
	}
}

// TestTooShortEpisodes checks that samples_per_episode 0 counts short and
// unreadable episodes, never plans a t without a valid pair, and plans
// each unreadable episode once (t = 0), so that its build is substituted
// and counted; a dataset with nothing but those has no units.
func TestTooShortEpisodes(t *testing.T) {
	s := DatasetShape{Name: "d", Weight: config.NewWeight(1, 1), MinOffset: 5,
		Segments: []Segment{{Split: "train", Shard: 0, First: 0, Count: 6}},
		Lengths:  []int32{6, 5, -1, 0, 10, 1}}
	p := mustPlan(t, Options{BatchSize: 4, SamplesPerEpisode: 0, WindowShards: 1}, []DatasetShape{s})
	d := p.Info().Datasets[0]
	if d.TooShort == nil || *d.TooShort != 3 || d.Unreadable == nil || *d.Unreadable != 1 || d.Units != 1+5+1 || d.Episodes != 6 {
		t.Fatalf("summary %+v: want 3 too short (5, 0, 1 steps), 1 unreadable, 7 units", d)
	}
	unreadable := 0
	for _, x := range samplesOf(p, 0, 70) {
		L := s.Lengths[x.Episode.Record]
		if L < 0 {
			if x.Unit != 0 {
				t.Fatalf("unit %d of an unreadable episode", x.Unit)
			}
			unreadable++
			continue
		}
		if x.Unit < 0 || int32(x.Unit) >= L-5 {
			t.Fatalf("t=%d in an episode of %d steps with offset 5", x.Unit, L)
		}
	}
	if unreadable != 10 {
		t.Fatalf("the unreadable episode planned %d times in 10 epochs, want 10", unreadable)
	}
	s.Lengths = []int32{-1, -1, 2, 3, 4, -1}
	if _, err := New(Options{BatchSize: 4, SamplesPerEpisode: 0, WindowShards: 1}, []DatasetShape{s}); err == nil ||
		!strings.Contains(err.Error(), "3 of 6 episodes are shorter than offset+1 = 6 steps and 3 are unreadable") {
		t.Fatalf("a dataset with only unreadable and short episodes: %v", err)
	}
	s.Lengths = []int32{1, 2, 3, 4, 5, -1}
	if _, err := New(Options{BatchSize: 4, SamplesPerEpisode: 0, WindowShards: 1}, []DatasetShape{s}); err == nil ||
		!strings.Contains(err.Error(), "5 of 6 episodes are shorter than offset+1 = 6") {
		t.Fatalf("a dataset without units: %v", err)
	}
}

// windowsOf maps each shard of a shape to its window, independently of the
// plan: the k-th distinct shard of the selection is in window k/ws.
func windowsOf(s DatasetShape, ws int) map[ShardKey]int {
	out := make(map[ShardKey]int)
	k := 0
	for i, sg := range s.Segments {
		if i > 0 && s.Segments[i-1].Split == sg.Split && s.Segments[i-1].Shard == sg.Shard {
			continue
		}
		out[ShardKey{Split: sg.Split, Shard: sg.Shard}] = k / ws
		k++
	}
	return out
}

// TestLocality proves property 3: over any run of consecutive batches that
// holds no more of a dataset than its smallest window, the dataset reads
// from at most two windows; and a window's shards are interleaved, not
// read one after the other.
func TestLocality(t *testing.T) {
	// 13 shards: windows of 4 (or 3) shards and a last window of one
	// large shard.
	sizes := []int{30, 10, 50, 20, 40, 25, 35, 15, 45, 5, 30, 30, 60}
	lengths := func(n int) []int32 {
		rng := rand.New(rand.NewPCG(9, 9))
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(3 + rng.IntN(30))
		}
		return out
	}
	var total int
	for _, n := range sizes {
		total += n
	}
	pairs := shapeOfShards("pairs", config.NewWeight(1, 1), sizes)
	pairs.Lengths, pairs.MinOffset = lengths(total), 2
	other := shapeOfShards("other", config.NewWeight(1, 1), repeat(10, 20))
	other.Lengths, other.MinOffset = lengths(200), 2
	for _, c := range []struct {
		name   string
		opts   Options
		shapes []DatasetShape
	}{
		{"samples_per_episode 1", Options{Seed: 1, BatchSize: 32, SamplesPerEpisode: 1, WindowShards: 4},
			[]DatasetShape{shapeOfShards("loc", config.NewWeight(1, 1), sizes), shapeOfShards("other", config.NewWeight(1, 1), repeat(10, 20))}},
		{"samples_per_episode 4", Options{Seed: 2, BatchSize: 32, SamplesPerEpisode: 4, WindowShards: 3},
			[]DatasetShape{shapeOfShards("loc", config.NewWeight(3, 1), sizes), shapeOfShards("other", config.NewWeight(1, 1), repeat(10, 20))}},
		{"samples_per_episode 0", Options{Seed: 3, BatchSize: 32, SamplesPerEpisode: 0, WindowShards: 4},
			[]DatasetShape{pairs, other}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := mustPlan(t, c.opts, c.shapes)
			win := windowsOf(c.shapes[0], c.opts.WindowShards)
			info := p.Info().Datasets[0]
			// The smallest window, in units, from the samples themselves.
			all := samplesOf(p, 0, 3*info.Units)
			winUnits := make(map[int]int64)
			for _, s := range all[:info.Units] {
				winUnits[win[ShardKey{Split: s.Episode.Split, Shard: s.Episode.Shard}]]++
			}
			minWin := info.Units
			for _, u := range winUnits {
				minWin = min(minWin, u)
			}
			perBatch := int64(info.PerBatch) + 1
			R := minWin / perBatch
			if R < 1 {
				t.Fatalf("test design: the smallest window (%d units) is smaller than a batch's share (%d)", minWin, perBatch)
			}
			batches := int64(3 * info.EpochBatches)
			var buf []Sample
			perB := make([]map[int]bool, batches)
			for n := range batches {
				perB[n] = make(map[int]bool)
				for _, s := range p.Batch(n, buf) {
					if s.Dataset == 0 {
						perB[n][win[ShardKey{Split: s.Episode.Split, Shard: s.Episode.Shard}]] = true
					}
				}
			}
			for a := int64(0); a+R <= batches; a++ {
				touched := make(map[int]bool)
				for n := a; n < a+R; n++ {
					for w := range perB[n] {
						touched[w] = true
					}
				}
				if len(touched) > 2 {
					t.Fatalf("batches %d..%d (%d batches, ≤ %d samples of a window of ≥ %d units) touch windows %v", a, a+R-1, R, R*perBatch, minWin, touched)
				}
			}
			// Within a window's span, consecutive samples change shard often.
			switches, runs := 0, 0
			for i := 1; i < len(all); i++ {
				a, b := all[i-1].Episode, all[i].Episode
				if win[ShardKey{Split: a.Split, Shard: a.Shard}] != win[ShardKey{Split: b.Split, Shard: b.Shard}] {
					continue
				}
				runs++
				if a.Shard != b.Shard {
					switches++
				}
			}
			if switches < runs/4 {
				t.Fatalf("only %d of %d consecutive samples of one window change shard: the window is not shuffled across its shards", switches, runs)
			}
		})
	}
}

func randomAccessPlan(t testing.TB) *Plan {
	var shapes []DatasetShape
	for i := range 6 {
		shapes = append(shapes, shapeOfShards(fmt.Sprint("ds", i), config.NewWeight(int64(i+1), 3), repeat(5+i, 7+3*i)))
	}
	return mustPlan(t, Options{Seed: 42, BatchSize: 32, SamplesPerEpisode: 2, WindowShards: 2}, shapes)
}

// TestRandomAccess proves property 4: any batch plans, whatever was planned
// before, in any order, concurrently, and far away.
func TestRandomAccess(t *testing.T) {
	const n = 2000
	ref := make([]string, n)
	p := randomAccessPlan(t)
	for i := range int64(n) {
		ref[i] = batchHash(p, i, i+1)
	}
	t.Run("any order", func(t *testing.T) {
		q := randomAccessPlan(t)
		for _, i := range rand.New(rand.NewPCG(1, 1)).Perm(n) {
			if got := batchHash(q, int64(i), int64(i+1)); got != ref[i] {
				t.Fatalf("batch %d planned out of order differs", i)
			}
		}
		r := randomAccessPlan(t)
		for i := int64(n - 1); i >= 0; i-- {
			if got := batchHash(r, i, i+1); got != ref[i] {
				t.Fatalf("batch %d planned backwards differs", i)
			}
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		q := randomAccessPlan(t)
		var wg sync.WaitGroup
		errs := make(chan string, 4)
		for g := range 4 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 7))
				for range 500 {
					i := rng.IntN(n)
					if batchHash(q, int64(i), int64(i+1)) != ref[i] {
						errs <- fmt.Sprintf("batch %d differs when planned concurrently", i)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Fatal(e)
		}
	})
	t.Run("batch 10^12", func(t *testing.T) {
		q := randomAccessPlan(t)
		const far = 1_000_000_000_000
		a := batchHash(p, far, far+3)
		if b := batchHash(q, far, far+3); a != b {
			t.Fatal("batch 10^12 differs between two plans")
		}
		s := q.Batch(far, nil)
		if len(s) != 32 || s[0].Epoch == 0 {
			t.Fatalf("batch 10^12: %d samples, epoch %d", len(s), s[0].Epoch)
		}
		q.Batch(q.MaxBatch(), nil)
	})
}

const childEnv = "OXEFS_MIX_PLAN_CHILD"

// TestCrossProcess plans batches 0..999 in a second process (this test
// binary, re-executed) and compares them byte for byte.
func TestCrossProcess(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		fmt.Printf("plan-hash %s\n", batchHash(randomAccessPlan(t), 0, 1000))
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrossProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	want := "plan-hash " + batchHash(randomAccessPlan(t), 0, 1000)
	if !strings.Contains(string(out), want) {
		t.Fatalf("the child process planned other batches:\n%s\nwant %s", out, want)
	}
}

// TestGolden pins the plan's output: a change here changes every batch of
// every existing mix, which breaks resuming a training run. Change it only
// on purpose.
func TestGolden(t *testing.T) {
	const want = "743fc46f9d388d4c1dabbe1d65b1b9dbe5faf726016c0f259eda659cdf8380fc"
	if got := batchHash(randomAccessPlan(t), 0, 100); got != want {
		t.Fatalf("batches 0..99 hash to %s, want %s", got, want)
	}
}

// TestSharding proves property 5: rank r of w plans global batches r, r+w, …;
// every rank lists the same number of batches, ⌈N/w⌉; together they plan
// the single-node epoch exactly once, plus fewer than w batches of the next
// epoch where w does not divide N.
func TestSharding(t *testing.T) {
	p := randomAccessPlan(t)
	total := p.NumBatches()
	for _, w := range []int{1, 3, 8, int(total) + 5} {
		t.Run(fmt.Sprint("world ", w), func(t *testing.T) {
			per := (total + int64(w) - 1) / int64(w)
			covered := make(map[int64]int)
			for r := range w {
				q, err := p.Shard(r, w)
				if err != nil {
					t.Fatal(err)
				}
				if q.NumBatches() != per {
					t.Fatalf("rank %d of %d lists %d batches, want %d like every rank", r, w, q.NumBatches(), per)
				}
				for n := range q.NumBatches() {
					g := n*int64(w) + int64(r)
					if batchHash(q, n, n+1) != batchHash(p, g, g+1) {
						t.Fatalf("rank %d batch %d differs from global batch %d", r, n, g)
					}
					covered[g]++
				}
			}
			for g := range total {
				if covered[g] != 1 {
					t.Fatalf("global batch %d of the epoch served %d times", g, covered[g])
				}
			}
			if extra := int64(len(covered)) - total; extra < 0 || extra >= int64(w) {
				t.Fatalf("%d batches past the epoch, want fewer than world %d", extra, w)
			}
			for g, c := range covered {
				if c != 1 {
					t.Fatalf("global batch %d served %d times", g, c)
				}
			}
		})
	}
	for _, bad := range [][2]int{{-1, 2}, {2, 2}, {0, 0}} {
		if _, err := p.Shard(bad[0], bad[1]); err == nil {
			t.Errorf("Shard(%d, %d) accepted", bad[0], bad[1])
		}
	}
}

// TestInterleave proves property 6: datasets are mixed within each batch,
// at positions that do not depend on the dataset.
func TestInterleave(t *testing.T) {
	p := mustPlan(t, Options{Seed: 5, BatchSize: 60, SamplesPerEpisode: 1, WindowShards: 4}, []DatasetShape{
		shapeOfShards("a", config.NewWeight(1, 1), repeat(20, 20)),
		shapeOfShards("b", config.NewWeight(1, 1), repeat(20, 20)),
		shapeOfShards("c", config.NewWeight(1, 1), repeat(20, 20)),
	})
	const batches = 2000
	grouped := 0
	posSum := make([]float64, 3)
	posN := make([]float64, 3)
	var buf []Sample
	for n := range int64(batches) {
		buf = p.Batch(n, buf)
		runs := 1
		for i := 1; i < len(buf); i++ {
			if buf[i].Dataset != buf[i-1].Dataset {
				runs++
			}
		}
		if runs <= 3 {
			grouped++
		}
		for i, s := range buf {
			posSum[s.Dataset] += float64(i)
			posN[s.Dataset]++
		}
	}
	if grouped > 0 {
		t.Fatalf("%d of %d batches hold their datasets in contiguous blocks", grouped, batches)
	}
	for d := range 3 {
		if mean := posSum[d] / posN[d]; mean < 28.5 || mean > 30.5 {
			t.Fatalf("dataset %d sits at mean position %.2f, want about 29.5", d, mean)
		}
	}
}

// TestSampleKey pins the key formula that package pairs relies on.
func TestSampleKey(t *testing.T) {
	p := randomAccessPlan(t)
	for _, s := range p.Batch(12345, nil) {
		name := fmt.Sprint("ds", s.Dataset)
		want := keyed.Hash(42, keyed.String(name+"/"+s.Episode.Split), uint64(s.Episode.Shard), uint64(s.Episode.Record), uint64(s.Unit), uint64(s.Epoch))
		if s.Key != want {
			t.Fatalf("sample %+v: key %#x, want keyed.Hash(seed, name/split, shard, record, unit, epoch) = %#x", s, s.Key, want)
		}
	}
}

// TestSubstitute checks the substitution walk: deterministic, from the
// sample alone (planned or substitute); the sample's window first, then
// every other episode of the dataset, each once; its own episode last with
// a new key.
func TestSubstitute(t *testing.T) {
	shapes := func() []DatasetShape {
		return []DatasetShape{
			shapeOfShards("a", config.NewWeight(1, 1), repeat(8, 6)),
			shapeOfShards("one", config.NewWeight(1, 1), []int{1}),
		}
	}
	opts := Options{Seed: 3, BatchSize: 16, SamplesPerEpisode: 3, WindowShards: 2}
	p, q := mustPlan(t, opts, shapes()), mustPlan(t, opts, shapes())
	win := windowsOf(shapes()[0], 2)
	walk := func(p *Plan, s Sample) []Sample {
		var out []Sample
		for r := range p.Substitutes(s) {
			out = append(out, r)
		}
		return out
	}
	for n := range int64(50) {
		for _, s := range p.Batch(n, nil) {
			w := walk(p, s)
			if s.Dataset == 1 {
				if len(w) != 1 || w[0].Episode != s.Episode || w[0].Key == s.Key || w[0].Attempt != 1 {
					t.Fatalf("single-episode dataset: %+v → %+v", s, w)
				}
				continue
			}
			if !slices.Equal(w, walk(q, s)) {
				t.Fatalf("the walk for %+v differs between plans", s)
			}
			if !slices.Equal(w[1:], walk(p, w[0])[1:]) || w[0] != walk(p, w[3])[0] {
				t.Fatalf("walking from a substitute gives another walk")
			}
			// 48 episodes: 47 others, then its own.
			if len(w) != 48 || w[47].Episode != s.Episode || w[47].Key == s.Key {
				t.Fatalf("walk of %d candidates for %+v, last %+v", len(w), s, w[len(w)-1])
			}
			eps := map[string]bool{fmt.Sprint(s.Episode): true}
			for i, r := range w[:47] {
				if eps[fmt.Sprint(r.Episode)] {
					t.Fatalf("candidate %d for %+v repeats episode %v", i, s.Episode, r.Episode)
				}
				eps[fmt.Sprint(r.Episode)] = true
				if r.Attempt != i+1 || r.Index != s.Index || r.Epoch != s.Epoch || r.Key == s.Key || r.Unit < 0 || r.Unit >= 3 {
					t.Fatalf("candidate %d: %+v for %+v", i, r, s)
				}
				// A window of 2 shards × 6 episodes has 11 other episodes.
				same := win[ShardKey{Split: r.Episode.Split, Shard: r.Episode.Shard}] == win[ShardKey{Split: s.Episode.Split, Shard: s.Episode.Shard}]
				if same != (i < 11) {
					t.Fatalf("candidate %d: %v for %v is in the window: %v", i, r.Episode, s.Episode, same)
				}
			}
		}
	}
}

// TestSubstituteSkipsEpisodesWithoutUnits: with samples_per_episode 0 the
// walk offers only episodes with units, and units that exist, never the
// unreadable episode (planned once, itself substituted).
func TestSubstituteSkipsEpisodesWithoutUnits(t *testing.T) {
	sh := shapeOfShards("a", config.NewWeight(1, 1), []int{4, 4, 4})
	sh.MinOffset = 5
	sh.Lengths = []int32{3, 3, 9, 3, 3, 3, 3, 3, 3, 7, 3, -1}
	p := mustPlan(t, Options{Seed: 1, BatchSize: 4, WindowShards: 1}, []DatasetShape{sh})
	for n := range int64(3) {
		for _, s := range p.Batch(n, nil) {
			var got []string
			for r := range p.Substitutes(s) {
				got = append(got, fmt.Sprintf("%d/%d", r.Episode.Shard, r.Episode.Record))
				max := map[string]int{"0/2": 4, "2/1": 2}[got[len(got)-1]]
				if r.Unit < 0 || r.Unit >= max {
					t.Fatalf("candidate %+v: unit out of [0, %d)", r, max)
				}
			}
			own := fmt.Sprintf("%d/%d", s.Episode.Shard, s.Episode.Record)
			if own == "2/3" {
				// The unreadable episode's one unit: the two long ones.
				if len(got) != 2 || got[0] == got[1] || got[0] == own || got[1] == own {
					t.Fatalf("walk for the unreadable %s: %v, want the two long episodes", own, got)
				}
				continue
			}
			if len(got) != 2 || got[1] != own {
				t.Fatalf("walk for %s: %v, want the other long episode, then %s", own, got, own)
			}
		}
	}
}

// TestShards checks that Shards lists exactly the shards a batch reads.
func TestShards(t *testing.T) {
	p := randomAccessPlan(t)
	for n := range int64(300) {
		want := make(map[ShardKey]bool)
		for _, s := range p.Batch(n, nil) {
			want[ShardKey{Dataset: s.Dataset, Split: s.Episode.Split, Shard: s.Episode.Shard}] = true
		}
		got := p.Shards(n, nil)
		if len(got) != len(want) {
			t.Fatalf("batch %d: Shards lists %d, the batch reads %d", n, len(got), len(want))
		}
		for _, k := range got {
			if !want[k] {
				t.Fatalf("batch %d: Shards lists %+v, which the batch does not read", n, k)
			}
		}
	}
}

// TestShardsAhead checks the prefetch order: every shard of the next
// batches once, in the order the batches first read them.
func TestShardsAhead(t *testing.T) {
	p := randomAccessPlan(t)
	got := p.ShardsAhead(100, 20, nil)
	var want []ShardKey
	seen := make(map[ShardKey]bool)
	for n := int64(100); n < 120; n++ {
		for _, k := range p.Shards(n, nil) {
			if !seen[k] {
				seen[k] = true
				want = append(want, k)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ShardsAhead %v\nwant %v", got, want)
	}
	if all := p.DatasetShards(2); len(all) != 7 || all[6].Shard != 6 {
		t.Fatalf("DatasetShards(2) = %v", all)
	}
}
