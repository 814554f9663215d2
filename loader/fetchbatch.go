package loader

import (
	"context"
	"errors"

	"golang.org/x/sync/errgroup"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/storage"
)

// One deadline per read, whatever the format: before a batch's samples
// are queued for decoding, every remote byte they need is asked for at
// once, so that a dead source fails the batch within one retry budget
// (--fetch-timeout + --fetch-stall) however many files lie behind it,
// instead of one budget per file as decode workers meet them in turn.
//
//   - Formats with a Fetcher (RLDS) fetch their episodes' records
//     themselves (format.FetchEpisodes).
//   - The others (LeRobot) have their episodes loaded, each on its own
//     goroutine, through the RAM cache that the samples then read (an
//     episode already there costs a lookup), and an episode whose decode
//     reads more bytes (format.EpisodeBytes: a LeRobot episode's video
//     samples) brings them into the disk cache.
//
// Only an unreachable source (storage.ErrUnavailable) or the reader
// giving up fails the batch here; any other error (damaged data, a
// missing file) is left to the sample that meets it, to be substituted
// and counted there.

// hasRemote reports whether any dataset of the mix is read from a remote
// source.
func (m *Mix) hasRemote() bool {
	for _, d := range m.Datasets {
		if !storage.IsFiler(d.Data.Backend()) {
			return true
		}
	}
	return false
}

// fetchBatch brings in the remote bytes of samples, all at once (see
// above), and fails with the first source found unreachable.
func (m *Mix) fetchBatch(ctx context.Context, samples []plan.Sample) error {
	g, gctx := errgroup.WithContext(ctx)
	if refs := m.EpisodeRefs(samples); len(refs) > 0 {
		g.Go(func() error { return format.FetchEpisodes(gctx, refs) })
	}
	type ref struct {
		dataset int
		key     episode.Key
	}
	seen := map[ref]bool{}
	for _, s := range samples {
		d := m.Datasets[s.Dataset]
		r := ref{s.Dataset, s.Episode}
		if seen[r] || format.FetcherOf(d.Data) != nil {
			continue
		}
		if storage.IsFiler(d.Data.Backend()) {
			continue
		}
		seen[r] = true
		g.Go(func() error {
			ep, err := d.Episodes.Episode(gctx, r.key)
			if err == nil {
				if eb, ok := ep.(format.EpisodeBytes); ok {
					err = eb.FetchBytes(gctx)
				}
			}
			return gives(err)
		})
	}
	return g.Wait()
}

// gives returns err when it should fail the whole batch at once: the
// source is unreachable, or the wait was cancelled. Anything else is left
// to the samples.
func gives(err error) error {
	if errors.Is(err, storage.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
