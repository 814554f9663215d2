package loader

import (
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/storage"

	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/oxefs/oxefs/config"
)

// probeBytes bounds the episode bytes checkLength reads from a local
// source while it looks for one episode long enough for the offset.
// Usually the first episode is; a selection that has none is read whole
// when it is smaller than this, and otherwise left to the first read to
// report (the builder's error names the dataset, the offset and the
// longest episode seen).
const probeBytes = 256 << 20

// lengthCheck is what the mount knows, before serving, about whether a
// selection has an episode long enough for its dataset's offset.
type lengthCheck struct {
	known   bool // the answer is known: from a length index, or read
	ok      bool // some episode is long enough
	longest int  // the most steps of a readable episode seen
	seen    int  // episodes looked at
}

// checkLengthsOf answers from a selection's indexed lengths.
func checkLengthsOf(lengths []int32, minOffset int) lengthCheck {
	c := lengthCheck{known: true, seen: len(lengths)}
	for _, l := range lengths {
		c.longest = max(c.longest, int(l))
		if int(l) > minOffset {
			c.ok = true
		}
	}
	return c
}

// probeLengths reads a local selection's episodes in split order until one
// is long enough for minOffset, within probeBytes. Corrupt episodes are
// skipped (the builder substitutes them); other errors are returned.
func probeLengths(ctx context.Context, d *Dataset, ranges []episode.Range, minOffset int) (lengthCheck, error) {
	var c lengthCheck
	var read int64
	for _, r := range ranges {
		si, ok := d.Data.Info().Split(r.Split)
		if !ok {
			return c, fmt.Errorf("no split %q", r.Split)
		}
		for i := r.From; i < r.To; i++ {
			shard, rec := si.Locate(i)
			ep, err := d.Episodes.Episode(ctx, episode.Key{Split: r.Split, Shard: shard, Record: int(rec)})
			c.seen++
			switch {
			case errors.Is(err, episode.ErrCorrupt):
				continue
			case err != nil:
				return c, err
			}
			c.longest = max(c.longest, ep.Steps())
			if ep.Steps() > minOffset {
				c.known, c.ok = true, true
				return c, nil
			}
			if read += int64(ep.Size()); read > probeBytes {
				return c, nil // unknown: too much to read at mount
			}
		}
	}
	c.known = true
	return c, nil
}

// checkLength refuses a selection (split for the train view, val_split for
// the val view) in which no episode is long enough for the offset, where
// that is known at mount: from the episode lengths (samples_per_episode 0,
// or an index built by `oxefs warm` or `inspect --index`), or, for a local
// source, by reading episodes until one is long enough. A remote source
// without an index is left to the first read. It returns nil when the
// selection is fine or the answer is not known.
func checkLength(ctx context.Context, d *Dataset, field, split string, ranges []episode.Range, lengths []int32, log *slog.Logger) *config.ConfigError {
	dc := &d.Config
	minOffset := dc.Offset.Min
	var c lengthCheck
	switch local := storage.IsFiler(d.Data.Backend()); {
	case lengths != nil:
		c = checkLengthsOf(lengths, minOffset)
	case local:
		var err error
		if c, err = probeLengths(ctx, d, ranges, minOffset); err != nil {
			log.Warn("could not check episode lengths against the offset", "dataset", dc.Name, "split", split, "err", err)
			return nil
		}
		if !c.known {
			log.Info("episode lengths not checked against the offset: the first episodes are too short and there are too many to read at mount",
				"dataset", dc.Name, "split", split, "episodes_read", c.seen, "longest_steps", c.longest, "offset", dc.Offset.String())
		}
	}
	if !c.known || c.ok {
		return nil
	}
	msg := fmt.Sprintf("no episode of %s %q is long enough for offset %s: a sample needs at least %d steps, and the longest of its %d episodes has %d",
		field, split, dc.Offset.String(), minOffset+1, c.seen, c.longest)
	if c.longest == 0 {
		msg = fmt.Sprintf("no episode of %s %q can be read (%d episodes, all corrupt)", field, split, c.seen)
	} else {
		msg += fmt.Sprintf("; lower the offset to at most %d, or leave the dataset out", c.longest-1)
	}
	return &config.ConfigError{Line: dc.Line("offset"), Dataset: dc.Name, Field: "offset", Msg: msg}
}
