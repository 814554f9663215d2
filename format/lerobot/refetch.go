package lerobot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/storage"
)

// The ranges and blocks a remote file is read by are kept in the disk
// cache as they come: the source publishes no checksum of a range. What
// the parsers check (an MP4 file's boxes, a parquet file's magic, footer
// and pages) is the only check, so bytes that fail it when read fresh may
// have been damaged in transit: the file's cached ranges are dropped and
// the read is done again from the source after a backoff, up to reparses
// times. The same error twice in a row is the file's own (bad data, as
// before); another error each time is a transient error matching
// storage.ErrChecksum, for that read only. Bytes damaged in a way the
// parsers do not notice (a frame's bytes, a value in a column) are kept as
// they came, until evicted.

// reparses bounds the reads of a file whose bytes failed their check, and
// reparseBackoff is the wait before the second, doubled after.
const (
	reparses       = 3
	reparseBackoff = 200 * time.Millisecond
)

// refetched runs read, which reads the file at path (identified by file)
// and fails with bad data (corruptBytes, *episode.CorruptError) when its
// bytes do not parse, and reads again as above. A source read in place, or
// without a disk cache, is read once: nothing is kept.
func (d *Dataset) refetched(ctx context.Context, path string, file func(context.Context, string) (*object, error), read func() error) error {
	err := read()
	if !badBytes(err) || !d.src.Cached() {
		return err
	}
	for try := 1; ; try++ {
		obj, oerr := file(ctx, path)
		if oerr != nil {
			return oerr
		}
		if ferr := d.src.ForgetVersion(path, obj.version); ferr != nil {
			return fmt.Errorf("%w (dropping its cached ranges to read it again: %v)", err, ferr)
		}
		if try >= reparses {
			return storage.Transient(fmt.Errorf("%s: its bytes failed to parse on %d reads, with another error each time (last: %v): %w",
				path, try, err, storage.ErrChecksum))
		}
		t := time.NewTimer(reparseBackoff << (try - 1))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		again := read()
		switch {
		case !badBytes(again):
			return again
		case again.Error() == err.Error():
			return again // the same failure from the source's bytes: the file's
		}
		err = again
	}
}

// badBytes reports whether err says that bytes read failed to parse, as
// opposed to a read that failed or a file that is missing.
func badBytes(err error) bool {
	return err != nil && (isCorrupt(err) || errors.Is(err, episode.ErrCorrupt)) && !errors.Is(err, episode.ErrMissingShard)
}
