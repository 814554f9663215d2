package rlds

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/oxefs/oxefs/format/rlds/tfrecord"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/store"
)

// An episode of a remote shard that is not in the disk cache is fetched on
// its own: the byte range of its record, [offset, offset+12+len+4), read
// through the store (store.Source.OpenAt, KeepRange) pinned to the version
// the shard was indexed at and checked (both CRCs) as it arrives (see
// recordCheck), then kept in the disk cache as a range of its own. Where
// the bytes come from (a download of the shard under way, a cached range,
// the source) is the disk cache's choice; such ranges share the whole
// shards' LRU and budget, one of another version never matches, and a
// whole-shard download of the same version copies them instead of
// fetching their bytes again. When the whole shard is in the cache, it is
// read instead.
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
		f, err = d.fetchRecord(ctx, store.Object{Name: name, Size: hi.info.Size, Version: hi.info.Version}, s)
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

// fetchRecord returns the bytes of the record at s of version o of a
// shard, through the store's ranged reads: kept in the disk cache as a
// range of their own, and checked as they arrive from the source.
func (d *Dataset) fetchRecord(ctx context.Context, o store.Object, s tfrecord.Span) (shardFile, error) {
	f, err := d.src.OpenAt(ctx, o, s.Offset, s.End()-s.Offset, store.ReadOptions{Keep: store.KeepRange,
		Check: func() io.WriteCloser { return newRecordCheck(s) }})
	if err != nil {
		return nil, fmt.Errorf("dataset %s shard %s: %w", d.Name, o.Name, err)
	}
	return &recordFile{shardFile: f, obj: o, off: s.Offset, n: s.End() - s.Offset}, nil
}

// recordFile is a record fetched on its own, as the disk cache keeps it:
// if its bytes fail their check when read back, load reports them to the
// store (store.Suspect), which may drop the range and fetch it again.
type recordFile struct {
	shardFile
	obj    store.Object
	off, n int64
}

// recordCheck checks one record's bytes as they arrive: its framing and
// both CRCs, and that they are the whole record at s, so that a damaged
// record fails before the disk cache has all of it and never publishes it.
type recordCheck struct {
	s   tfrecord.Span
	x   *tfrecord.Indexer
	got int64
}

func newRecordCheck(s tfrecord.Span) *recordCheck {
	return &recordCheck{s: s, x: tfrecord.NewIndexer(maxRecord)}
}

func (c *recordCheck) Write(p []byte) (int, error) {
	n, err := c.x.Write(p)
	c.got += int64(n)
	if err != nil {
		return n, atShardOffset(err, c.s.Offset)
	}
	return n, nil
}

// Close reports what is wrong with the bytes written, if anything.
func (c *recordCheck) Close() error {
	if err := c.x.Close(); err != nil {
		return atShardOffset(err, c.s.Offset)
	}
	if c.got != c.s.End()-c.s.Offset {
		// The object ended early, on a record boundary.
		return &tfrecord.CorruptError{Offset: c.s.Offset, Index: -1, Reason: "truncated record"}
	}
	if sp := c.x.Spans(); len(sp) != 1 || sp[0].Len != c.s.Len {
		return &tfrecord.CorruptError{Offset: c.s.Offset, Index: -1,
			Reason: fmt.Sprintf("record length does not match span length %d", c.s.Len)}
	}
	return nil
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
