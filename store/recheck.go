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
//
// The same failure twice may still be damage in transit that repeats
// itself (a proxy that garbles the same byte of every such request). So
// before that verdict is given, when the source publishes a checksum of
// the whole object at the version read (GCS's CRC32C, a single-part S3
// upload's ETag, the Hub's LFS SHA-256) and the store has a disk cache
// that can hold it, the whole object is fetched into the disk cache and
// checked against that checksum (the disk cache's whole-object rule,
// verify.go), and the read is done once more with every ranged read of
// that version served from the checked copy: what its check says then is
// the verdict, so a healthy source is never substituted for good.
// Otherwise (no checksum, no room) the verdict stands for this daemon,
// and is never saved: the next one looks again.

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
// verdict that the bytes are the source's (the same failure twice, and,
// where it can be had, again in the whole object checked against the
// source's checksum) returns the last Suspect's Err.
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
			return s.reexamine(ctx, sus, read)
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
		s.log.Debug("bytes failed their check; read them again", "source", s.Location(), "object", sus.Object.Name,
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

// reexamine gives the verdict on bytes that failed their check the same
// way twice (see above): read once more from the whole object checked
// against its source's checksum, when it can be had; the verdict that the
// bytes are the source's (sus.Err) otherwise.
func (s *Source) reexamine(ctx context.Context, sus *Suspect, read func() error) error {
	ok, err := s.verifyWhole(ctx, sus.Object)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, storage.ErrChecksum):
		// Damaged on every download too: no verdict on the source.
		return fmt.Errorf("%v; the whole object, fetched to look again: %w", sus.Err, err)
	case err != nil:
		s.log.Info("could not fetch a whole object to look again at bytes that failed their check twice; the failure stands",
			"source", s.Location(), "object", sus.Object.Name, "err", err)
	}
	if !ok {
		return sus.Err
	}
	s.log.Info("bytes failed their check twice; read again from the whole object, checked against the source's checksum",
		"source", s.Location(), "object", sus.Object.Name, "offset", sus.Extent.Off, "err", sus.Err)
	err = read()
	if again, ok := errors.AsType[*Suspect](err); ok {
		return again.Err // the source's own bytes: its checksum says so
	}
	return err
}

// verifyWhole fetches the whole object o into the disk cache, checked
// against the checksum its source publishes of o's version, and reports
// whether it did: from then on, the ranged reads of o come from that copy
// (see checked). It does nothing, and reports false, when there is no
// disk cache, o names no version, or the source publishes no checksum of
// it.
func (s *Source) verifyWhole(ctx context.Context, o Object) (bool, error) {
	if s.cache == nil || o.Version == "" {
		return false, nil
	}
	info, err := s.remote.Stat(ctx, o.Name)
	if err != nil {
		return false, err
	}
	if info.Version != o.Version || !info.Checksum.Published() {
		return false, nil
	}
	f, err := s.cache.OpenObject(ctx, o, false)
	if err != nil {
		return false, err
	}
	f.Close()
	s.mu.Lock()
	if s.verified == nil {
		s.verified = make(map[Object]bool)
	}
	s.verified[o] = true
	s.mu.Unlock()
	return true, nil
}

// checked returns the whole copy of o that verifyWhole fetched and
// checked, when there is one and the disk cache still holds it, and nil
// otherwise.
func (s *Source) checked(o Object) storage.File {
	s.mu.Lock()
	ok := s.verified[o]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	f, err := s.cache.OpenCachedObject(o)
	if err != nil {
		return nil
	}
	return f
}
