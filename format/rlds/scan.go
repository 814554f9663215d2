package rlds

import (
	"context"
	"errors"

	"golang.org/x/sync/errgroup"

	"github.com/oxefs/oxefs/episode"
)

// Scan loads every episode of segs: at most workers segments at once, each
// segment's episodes in order by one goroutine, a remote shard downloaded
// whole first (every record is read: one download beats a request per
// record) and held in the disk cache until its segment is done. visit is
// called with the segment's index and each episode, or with the
// *episode.CorruptError of an episode that could not be read; any other
// load error, or an error visit returns, stops the scan. Calls for one
// segment are sequential; calls for different segments run at once.
func (d *Dataset) Scan(ctx context.Context, segs []episode.Segment, workers int, visit func(seg int, ref Ref, ep episode.Episode, err error) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	for i, s := range segs {
		g.Go(func() error {
			if d.src.Cached() {
				if name, err := d.ShardName(s.Split, s.Shard); err == nil {
					if f, _, err := d.openShard(gctx, name, false); err == nil {
						defer f.Close()
					}
				}
			}
			for r := s.First; r < s.First+s.Count; r++ {
				ref := Ref{Split: s.Split, Shard: s.Shard, Record: r}
				ep, err := d.load(gctx, ref)
				var verr error
				switch {
				case err == nil:
					verr = visit(i, ref, ep, nil)
				case errors.Is(err, episode.ErrCorrupt):
					verr = visit(i, ref, nil, err)
				default:
					return err
				}
				if verr != nil {
					return verr
				}
			}
			return nil
		})
	}
	return g.Wait()
}
