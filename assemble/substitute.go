package assemble

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
)

// maxImageFailures bounds the candidates whose frames fail to decode that
// one sample tries before its batch fails. Such damage may touch only some
// frames, so those episodes are tried again by other samples; a dataset
// where this many in a row cannot be decoded has a problem to report, not
// to walk through. Episodes that cannot give any sample (corrupt records,
// too short for the offset) are not bounded: every episode of the dataset
// is tried, once, before a sample fails.
const maxImageFailures = 64

// maxKnownBad bounds the episodes a Builder remembers as unusable (about
// 100 bytes each). Beyond it, more are tried again; the result is the same.
const maxKnownBad = 1 << 20

// badKind is why an episode can give no sample at all.
type badKind uint8

const (
	badShort   badKind = iota + 1 // too short for the offset
	badCorrupt                    // the record, or a feature every sample reads, is damaged
)

type episodeKey struct {
	dataset int
	ref     episode.Key
}

// substitutions is what a Builder's workers learn while substituting.
// Only facts that hold for every sample of an episode are remembered, so
// skipping on them never changes which candidate replaces a sample.
type substitutions struct {
	longest []atomic.Int64 // by dataset: the most steps of any episode loaded

	mu       sync.Mutex
	bad      map[episodeKey]badKind // guarded by mu
	unusable []error                // guarded by mu: by dataset, set once no episode can be used
}

func newSubstitutions(datasets int) *substitutions {
	return &substitutions{
		longest:  make([]atomic.Int64, datasets),
		bad:      map[episodeKey]badKind{},
		unusable: make([]error, datasets),
	}
}

func (u *substitutions) saw(dataset, steps int) {
	l := &u.longest[dataset]
	for {
		cur := l.Load()
		if int64(steps) <= cur || l.CompareAndSwap(cur, int64(steps)) {
			return
		}
	}
}

func (u *substitutions) known(s plan.Sample) badKind {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bad[episodeKey{s.Dataset, s.Episode}]
}

func (u *substitutions) markBad(s plan.Sample, k badKind) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.bad) < maxKnownBad {
		u.bad[episodeKey{s.Dataset, s.Episode}] = k
	}
}

func (u *substitutions) unusableErr(dataset int) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.unusable[dataset]
}

// setUnusable records err for dataset and reports whether it is the first.
func (u *substitutions) setUnusable(dataset int, err error) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.unusable[dataset] != nil {
		return false
	}
	u.unusable[dataset] = err
	return true
}

// try builds sample s from its own episode.
func (b *Builder) try(ctx context.Context, s plan.Sample, stage *sample.Stage, i int, build func(c plan.Sample, ep episode.Episode) error) error {
	if err := ctx.Err(); err != nil {
		return err // between substitutes: shutting down
	}
	ep, hold, err := b.episode(ctx, s)
	if err != nil {
		return err
	}
	if hold != nil {
		// Nothing of the episode outlives the build: the sample's frames
		// and metadata are copies.
		defer hold.Release()
	}
	b.subs.saw(s.Dataset, ep.Steps())
	if err := build(s, ep); err != nil {
		// Others may copy this candidate's frames no longer: a substitute
		// overwrites them.
		stage.Revoke(i)
		return err
	}
	b.stats.Samples[s.Dataset].Add(1)
	return nil
}

// episode returns s's episode, lent when the dataset lends (see
// episode.Lender): hold, when not nil, is released once the sample is
// built.
func (b *Builder) episode(ctx context.Context, s plan.Sample) (episode.Episode, episode.Recycled, error) {
	ds := b.datasets[s.Dataset].Episodes
	if l, ok := ds.(episode.Lender); ok {
		return l.Lend(ctx, s.Episode)
	}
	ep, err := ds.Episode(ctx, s.Episode)
	return ep, nil, err
}

// failed classifies a failed attempt at s. ok is false for errors that
// are not the data's fault (a source that is down, a cancelled context)
// and for corrupt data under --strict: those fail the read. Otherwise the
// failure is counted and logged once per episode, and an episode that can
// give no sample at all (whole is not 0) is remembered.
func (b *Builder) failed(s plan.Sample, err error) (whole badKind, ok bool) {
	var kind string
	switch {
	case errors.Is(err, sample.ErrShortEpisode):
		kind, whole = "short_episode", badShort // not damage: such an episode has no units
	case errors.Is(err, episode.ErrMissingShard) && !b.strict:
		kind, whole = "missing_shard", badCorrupt // a listed shard that is not there
	case errors.Is(err, episode.ErrCorrupt) && !b.strict:
		kind, whole = "corrupt", badCorrupt
		var ie *frames.ImageError
		if errors.As(err, &ie) {
			whole = 0 // other frames of the episode may decode
		}
	default:
		return 0, false
	}
	id := b.datasets[s.Dataset].EpisodeID(s.Episode)
	if b.stats.substituted(kind, id, err) {
		b.log.Warn("substituting a bad sample unit", "reason", kind, "episode", id, "err", err)
	}
	if whole != 0 {
		b.subs.markBad(s, whole)
	}
	return whole, true
}

// walkTally counts the episodes a substitution walk found unusable.
type walkTally struct {
	short, corrupt, images int
	last                   error
}

func (t *walkTally) add(k badKind, err error) {
	switch k {
	case badShort:
		t.short++
	case badCorrupt:
		t.corrupt++
	default:
		t.images++
	}
	if err != nil {
		t.last = err
	}
}

// noUsableEpisode is the error of a sample for which the whole dataset
// has no usable episode.
func (b *Builder) noUsableEpisode(s plan.Sample, t walkTally) error {
	ds := b.datasets[s.Dataset]
	info := b.plan.Info().Datasets[s.Dataset]
	nd := b.kind.Needs(s.Dataset)
	what, need, fix := nd.What, nd.Steps, nd.Fix
	longest := b.subs.longest[s.Dataset].Load()
	where := fmt.Sprintf("dataset %s (source %s, split %s)", ds.Name, info.Source, info.Split)
	if t.short > 0 && t.corrupt == 0 && t.images == 0 {
		return fmt.Errorf("%s: no episode is long enough for %s: all %d need at least %d steps (longest seen: %d steps); %s or drop the dataset",
			where, what, t.short, need, longest, fix)
	}
	var parts []string
	if t.short > 0 {
		parts = append(parts, fmt.Sprintf("%d too short for %s (it needs %d steps; longest seen: %d)", t.short, what, need, longest))
	}
	if t.corrupt > 0 {
		parts = append(parts, fmt.Sprintf("%d corrupt", t.corrupt))
	}
	if t.images > 0 {
		parts = append(parts, fmt.Sprintf("%d with frames that do not decode", t.images))
	}
	return fmt.Errorf("%s: no usable episode among %d tried: %s; last: %w", where, t.short+t.corrupt+t.images, strings.Join(parts, ", "), t.last)
}
