package rlds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/oxefs/oxefs/format/rlds/tfrecord"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/diskcache"
)

// An episode of a remote shard that is not in the disk cache is fetched on
// its own: the byte range of its record, [offset, offset+12+len+4), read
// pinned to the version the shard was indexed at and checked (both CRCs)
// as it arrives, then published in the disk cache as an entry of its own
// (diskcache.Backend.OpenRange, keyed by version, offset and length). Such
// entries share the whole shards' LRU and budget; one of another version
// never matches, and a whole-shard download of the same version copies
// them instead of fetching their bytes again. When the whole shard is in
// the cache, it is read instead.
//
// A shard rewritten after it was indexed is detected by its version (the
// pinned read finds the version gone): the index and the cached records of
// the old version are dropped, the shard is indexed again, and the read is
// served from the new version. Bytes of two versions are never mixed: each
// read is of one version, and a record's bytes come from one read.

// openRemoteRecord opens the cached record ref of a remote shard (fetching
// it when absent). It returns the open entry, the record's span in it and
// the record's offset in the shard.
func (d *Dataset) openRemoteRecord(ctx context.Context, ref Ref, name string) (shardFile, tfrecord.Span, int64, error) {
	var err error
	for range versionTries {
		var hi *hopIndex
		hi, err = d.remoteIndex(ctx, name)
		if err != nil {
			return nil, tfrecord.Span{}, 0, err
		}
		var s tfrecord.Span
		if s, err = d.recordSpan(ref, name, hi.spans, hi.broken, hi.info.Size); err != nil {
			return nil, tfrecord.Span{}, 0, err
		}
		var f shardFile
		f, err = d.fetchRecord(ctx, name, hi.info.Version, s)
		if errors.Is(err, storage.ErrVersionGone) {
			d.store.Log().Info("shard rewritten since it was indexed; indexing it again", "dataset", d.Name, "shard", name)
			d.forgetRemote(name, hi)
			continue
		}
		if err != nil {
			return nil, tfrecord.Span{}, 0, err
		}
		return f, tfrecord.Span{Offset: 0, Len: s.Len}, s.Offset, nil
	}
	return nil, tfrecord.Span{}, 0, fmt.Errorf("dataset %s shard %s: rewritten while being read, %d times: %w", d.Name, name, versionTries, err)
}

// fetchRecord returns the disk-cache entry holding the record at s of the
// given version of a shard, fetching the record's bytes when absent.
func (d *Dataset) fetchRecord(ctx context.Context, name, version string, s tfrecord.Span) (shardFile, error) {
	n := s.End() - s.Offset
	f, err := d.cached.OpenRange(ctx, name, version, s.Offset, n, func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
		if err := d.cached.Remembered(name); err != nil {
			return err
		}
		if err := reserve(n); err != nil {
			return err
		}
		if d.copyFilling(ctx, name, version, s, w) {
			return nil
		}
		err := d.copyRecord(ctx, name, version, s, w)
		d.cached.Remember(name, err)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dataset %s shard %s: %w", d.Name, name, err)
	}
	return f, nil
}

// copyFilling copies the record at s from the whole-shard download under
// way in this process (a prefetch streaming the shard in slices), when all
// of its bytes have arrived there, they are of version, and they frame one
// record with both CRCs right; it reports whether it did. Nothing is
// written to w otherwise, so the caller fetches the record itself.
func (d *Dataset) copyFilling(ctx context.Context, name, version string, s tfrecord.Span, w io.Writer) bool {
	if version == "" || !d.cached.Filled(name, s.Offset, s.End()-s.Offset) {
		return false // none under way, not arrived yet, or of an unknown version
	}
	buf := make([]byte, s.End()-s.Offset)
	ok, got, err := d.cached.ReadFilling(ctx, name, buf, s.Offset)
	if err != nil || !ok || got != version {
		return false
	}
	if _, err := copyChecked(bytes.NewReader(buf), io.Discard, s); err != nil {
		return false
	}
	if _, err := w.Write(buf); err != nil {
		return false
	}
	d.store.Stats.RangesFromFill.Add(1)
	return true
}

// copyRecord streams one record's bytes, of one version, into w, checking
// its framing and both CRCs on the way: a damaged record fails before w
// has all of it, so the disk cache never publishes it. The request yields
// to more urgent readers (diskcache.Preemptible).
func (d *Dataset) copyRecord(ctx context.Context, name, version string, s tfrecord.Span, w io.Writer) error {
	n := s.End() - s.Offset
	rc := diskcache.Preemptible(ctx, w, s.Offset, n, func(ctx context.Context, off, n int64) (io.ReadCloser, error) {
		return storage.OpenVersion(ctx, d.remote, name, version, off, n)
	})
	defer rc.Close()
	got, err := copyChecked(rc, w, s)
	d.store.Stats.RangeBytes.Add(got)
	if _, corrupt := errors.AsType[*tfrecord.CorruptError](err); err == nil || corrupt {
		d.store.Stats.RangesFetched.Add(1) // all its bytes came
	}
	return err
}

// copyChecked copies the record at s from r into w, checking its
// framing and both CRCs on the way, and returns the bytes copied.
func copyChecked(r io.Reader, w io.Writer, s tfrecord.Span) (int64, error) {
	n := s.End() - s.Offset
	x := tfrecord.NewIndexer(maxRecord)
	got, err := io.Copy(io.MultiWriter(x, w), r)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil // the object ended early: reported below
	}
	if err != nil {
		return got, atShardOffset(err, s.Offset)
	}
	if err := x.Close(); err != nil {
		return got, atShardOffset(err, s.Offset)
	}
	if got != n {
		// The object ended early, on a record boundary.
		return got, &tfrecord.CorruptError{Offset: s.Offset, Index: -1, Reason: "truncated record"}
	}
	if sp := x.Spans(); len(sp) != 1 || sp[0].Len != s.Len {
		return got, &tfrecord.CorruptError{Offset: s.Offset, Index: -1,
			Reason: fmt.Sprintf("record length does not match span length %d", s.Len)}
	}
	return got, nil
}

// atShardOffset turns a *tfrecord.CorruptError about a record read on its
// own (offset 0, index 0 or unknown) into one about the record at off in
// its shard, index unknown, as a read from the whole shard reports it.
// Other errors come back as they are.
func atShardOffset(err error, off int64) error {
	ce, ok := errors.AsType[*tfrecord.CorruptError](err)
	if !ok {
		return err
	}
	return &tfrecord.CorruptError{Offset: off + ce.Offset, Index: -1, Reason: ce.Reason}
}
