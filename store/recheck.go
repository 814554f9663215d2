package store

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/diskcache"
)

// A format checks the bytes it reads (a TFRecord header's CRC, an MP4
// file's boxes, a parquet file's footer), but bytes that fail a check may
// have been damaged in transit, or on the disk cache's disk, rather than
// at the source. The format only reports it: read's error is a *Suspect.
// What follows is the store's, written once (diskcache.Retrial, the rule
// the disk cache's own checked ranges follow): the bytes the disk cache
// keeps of the suspect extent are dropped, and the read is done again
// after a backoff; the same failure twice is the source's own bytes, and
// the check's error stands (real corruption, which the format
// substitutes and counts); another failure each time is a transient
// error matching storage.ErrChecksum (EIO for that read), and nothing is
// kept. A source of local files is its own truth: its failures stand at
// once.

// Suspect is a format's report that bytes it read through a Source failed
// its own check: the error a read given to Recheck returns.
type Suspect struct {
	// Object is the object whose bytes failed.
	Object Object
	// Extent is where they lie, when the format knows (a record, a
	// header); zero: somewhere in the object, whose every cached range
	// of Object's version is then dropped before the read again.
	Extent Extent
	// Bytes are the bytes that failed, when the format holds them; two
	// failures are compared by them, and by the error's text otherwise.
	Bytes []byte
	// Err is what the check said.
	Err error
}

func (e *Suspect) Error() string { return e.Err.Error() }
func (e *Suspect) Unwrap() error { return e.Err }

// evidence is what the store compares two failures by.
func (e *Suspect) evidence() diskcache.Evidence {
	ev := diskcache.Evidence{At: e.Extent.Off}
	if e.Bytes != nil {
		ev.Len, ev.Sum = int64(len(e.Bytes)), crc32.Checksum(e.Bytes, storage.CastagnoliTable)
	} else {
		ev.Len, ev.Sum = e.Extent.Len, crc32.Checksum([]byte(e.Err.Error()), storage.CastagnoliTable)
	}
	return ev
}

// Recheck runs read, a read of bytes through s and the format's check of
// them, and returns its error; when read reports bytes that failed the
// check (a *Suspect), the store decides what they are (see above): read
// is called again until the check passes or there is a verdict. The
// verdict that the bytes are the source's returns the last Suspect's Err.
func (s *Source) Recheck(ctx context.Context, read func() error) error {
	err := read()
	sus, ok := errors.AsType[*Suspect](err)
	if !ok {
		return err
	}
	if s.InPlace() {
		return sus.Err // nothing between the bytes and their file
	}
	r := s.retrial()
	for {
		v, werr := r.Failed(ctx, sus.evidence())
		if v == diskcache.VerdictSource {
			return sus.Err
		}
		if ferr := s.drop(sus); ferr != nil {
			return fmt.Errorf("%w (dropping the cached bytes to read them again: %v)", sus.Err, ferr)
		}
		if v == diskcache.VerdictGaveUp {
			return storage.Transient(fmt.Errorf("%s: bytes at %d failed their check on %d reads, other bytes each time (last: %v): %w",
				storage.Object(s.src, sus.Object.Name), sus.Extent.Off, r.Fetches(), sus.Err, storage.ErrChecksum))
		}
		if werr != nil {
			return werr
		}
		s.log.Warn("bytes failed their check; read them again", "source", s.Location(), "object", sus.Object.Name,
			"offset", sus.Extent.Off, "bytes", sus.Extent.Len, "read", r.Fetches()+1, "err", sus.Err)
		err = read()
		if sus, ok = errors.AsType[*Suspect](err); !ok {
			return err
		}
	}
}

// retrial is the rule bytes that failed a check are read again by.
func (s *Source) retrial() *diskcache.Retrial {
	if s.cache != nil {
		return s.cache.Retrial()
	}
	return diskcache.NewRetrial()
}

// drop drops what the disk cache keeps of the suspect bytes.
func (s *Source) drop(sus *Suspect) error {
	if s.cache == nil {
		return nil
	}
	o := sus.Object
	if sus.Extent.Len > 0 {
		return s.cache.ForgetRange(o.Name, o.Version, sus.Extent.Off, sus.Extent.Len)
	}
	return s.cache.ForgetRanges(o.Name, o.Version)
}
