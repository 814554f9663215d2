package rlds

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/oxefs/oxefs/format/rlds/tfrecord"
	"github.com/oxefs/oxefs/internal/atomicfile"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/store"
)

// A remote shard that is not in the disk cache is indexed by header hops:
// one ranged read of the 12-byte header at offset 0, which gives the first
// record's length and so the offset of the next header, and so on to the
// end of the object. Every hop checks the header's CRC (tfrecord.Index over
// ranged reads). Every read is pinned to the version Stat gave
// (storage.Versioner), through the store (store.Source.ReadAt, kept
// nowhere), so the index describes one upload; it is kept under
// the source's index directory, keyed by that version and size, and reused
// across restarts while the object is unchanged.

// hopIndex is the record index of one version of a remote shard.
type hopIndex struct {
	ready chan struct{}
	// Set before ready closes.
	info  storage.ObjectInfo
	spans []tfrecord.Span
	// broken is the framing error that ended the index early; records from
	// len(spans) on are unreadable.
	broken error
	// err is why there is no index (a missing shard, a source given up
	// on); such an entry leaves the map, so a later read tries again.
	err error
}

// recordIndex is a hopIndex as saved under the index directory: of a
// shard whose framing held to its end. A broken verdict is not saved:
// identical damage on two reads (a proxy that garbles the same byte) looks
// like the source's own. The store looks again at once where the shard's
// checksum can be had (store.Source.Recheck); where it cannot, each daemon
// looks again, and a healthy source is never substituted for good. Broken is read only to refuse the
// indexes older daemons saved with a verdict.
type recordIndex struct {
	Size    int64                  `json:"size"`
	Version string                 `json:"version"`
	Lengths []int64                `json:"lengths"` // payload length of each record, in order from offset 0
	Broken  *tfrecord.CorruptError `json:"broken,omitempty"`
}

// recordIndexPath is where a shard's hop index is saved.
func (d *Dataset) recordIndexPath(name string) string {
	return filepath.Join(d.indexDir(), "records", name+".json")
}

// remoteIndex returns the record index of a remote shard, building it on
// first use (hops, or the saved index when its object is unchanged). The
// build runs under the store's lifetime, shared by every reader that waits
// for it; ctx bounds only this reader's wait.
func (d *Dataset) remoteIndex(ctx context.Context, name string) (*hopIndex, error) {
	d.mu.Lock()
	hi, ok := d.hops[name]
	if !ok {
		done, ok := d.store.Begin()
		if !ok {
			d.mu.Unlock()
			return nil, context.Canceled
		}
		hi = &hopIndex{ready: make(chan struct{})}
		d.hops[name] = hi
		go func() {
			defer done()
			d.buildHopIndex(name, hi)
		}()
	}
	d.mu.Unlock()
	select {
	case <-hi.ready:
	default:
		// Header reads are what a reader waits for: less urgent fills
		// (prefetches, later batches) pause meanwhile.
		defer d.store.Demand(ctx)()
		select {
		case <-hi.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if hi.err != nil {
		return nil, hi.err
	}
	return hi, nil
}

// buildHopIndex fills hi and closes its ready channel; on failure it drops
// hi from the map first.
func (d *Dataset) buildHopIndex(name string, hi *hopIndex) {
	defer close(hi.ready)
	hi.err = d.indexByHops(d.store.Context(), name, hi)
	if hi.err != nil {
		d.mu.Lock()
		if d.hops[name] == hi {
			delete(d.hops, name)
		}
		d.mu.Unlock()
	}
}

// versionTries bounds how often an index starts over because the object
// changed under it.
const versionTries = 3

func (d *Dataset) indexByHops(ctx context.Context, name string, hi *hopIndex) error {
	// A shard of a dead source fails at once, without queueing for a
	// slot behind the shards that may still succeed.
	release, err := d.src.IndexSlot(ctx, name)
	if err != nil {
		return fmt.Errorf("dataset %s shard %s: %w", d.Name, name, err)
	}
	defer release()
	for range versionTries {
		var o store.Object
		o, err = d.shardObject(ctx, name)
		if err != nil {
			return err
		}
		info := storage.ObjectInfo{Size: o.Size, Version: o.Version}
		if d.loadRecordIndex(name, info, hi) {
			return nil
		}
		spans, broken := d.indexChecked(ctx, o)
		if broken != nil && !errors.Is(broken, tfrecord.ErrCorrupt) {
			err = fmt.Errorf("dataset %s shard %s: index by header hops: %w", d.Name, name, broken)
			if errors.Is(broken, storage.ErrVersionGone) {
				d.forgetObject(name, o)
				continue // rewritten meanwhile: index the new version
			}
			return err
		}
		hi.info, hi.spans, hi.broken = info, spans, broken
		if broken != nil {
			d.store.Log().Warn("corrupt shard framing", "dataset", d.Name, "shard", name,
				"readable_records", len(spans), "err", broken)
		}
		if err := d.saveRecordIndex(name, hi); err != nil {
			d.store.Log().Warn("could not save a shard's record index; it will be built again", "dataset", d.Name,
				"shard", name, "err", err)
		}
		return nil
	}
	return err
}

// loadRecordIndex fills hi from the saved index when it is for info's
// bytes, and reports whether it did.
func (d *Dataset) loadRecordIndex(name string, info storage.ObjectInfo, hi *hopIndex) bool {
	b, err := os.ReadFile(d.recordIndexPath(name))
	if err != nil {
		return false
	}
	var ri recordIndex
	if json.Unmarshal(b, &ri) != nil || ri.Size != info.Size || ri.Version != info.Version || ri.Broken != nil {
		return false
	}
	spans := make([]tfrecord.Span, len(ri.Lengths))
	var off int64
	for i, n := range ri.Lengths {
		spans[i] = tfrecord.Span{Offset: off, Len: n}
		off = spans[i].End()
	}
	hi.info, hi.spans, hi.broken = info, spans, nil
	return true
}

// saveRecordIndex writes hi under the index directory, atomically, when
// the shard's framing held (see recordIndex).
func (d *Dataset) saveRecordIndex(name string, hi *hopIndex) error {
	if hi.broken != nil {
		return nil
	}
	ri := recordIndex{Size: hi.info.Size, Version: hi.info.Version, Lengths: make([]int64, len(hi.spans))}
	for i, s := range hi.spans {
		ri.Lengths[i] = s.Len
	}
	return atomicfile.WriteJSON(d.recordIndexPath(name), ri)
}

// forgetRemote drops the record index of a remote shard (in memory and
// saved), once it is known to describe a version that is gone. Only hi is
// dropped from memory: a newer index stays. The records the disk cache
// keeps of that version are the store's: dropped when a read finds the
// version gone, left to the budget's LRU otherwise (a read of the new
// version never matches them).
func (d *Dataset) forgetRemote(name string, hi *hopIndex) {
	d.mu.Lock()
	if hi == nil || d.hops[name] == hi {
		delete(d.hops, name)
	}
	if hi != nil {
		if o, ok := d.objects[name]; ok && o.Version == hi.info.Version {
			delete(d.objects, name)
			delete(d.spans, name)
		}
	}
	d.mu.Unlock()
	if err := os.Remove(d.recordIndexPath(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.store.Log().Warn("could not remove a stale record index", "dataset", d.Name, "shard", name, "err", err)
	}
}

// A header whose CRC fails may have been damaged in transit rather than at
// the source: tfrecord.Index reports it to the store (store.Suspect, with
// the header's bytes), which reads it again before the shard's framing is
// called broken (store.Source.Recheck). When the source gives the same
// bytes again, the store looks at the whole shard checked against its
// checksum, when it can, and the index goes on from that copy; otherwise
// the verdict stands for this daemon (never saved: the next one looks
// again, see recordIndex); when it gives others, the index goes on from
// there with them; when every read gives other failing bytes,
// indexing fails with a transient error (EIO for the reads that wait on
// it) and nothing is saved.

// indexChecked indexes version o of a shard by header hops (see above)
// and returns the spans of the records whose framing held, and the error
// that ended the index early, if any.
func (d *Dataset) indexChecked(ctx context.Context, o store.Object) ([]tfrecord.Span, error) {
	r := &versionReader{ctx: ctx, src: d.src, obj: o, hops: &d.store.Stats.Hops, seen: map[int64][]byte{}}
	var (
		spans  []tfrecord.Span
		broken error
	)
	err := d.src.Recheck(ctx, func() error {
		spans, broken = tfrecord.Index(r, o.Size)
		ce, ok := errors.AsType[*tfrecord.CorruptError](broken)
		if !ok {
			return nil // the framing held, or the source failed
		}
		r.fresh = ce.Offset // read again from the header that failed
		return &store.Suspect{Object: o, Extent: store.Extent{Off: ce.Offset, Len: tfrecord.HeaderLen},
			Bytes: r.seen[ce.Offset], Err: broken}
	})
	if err != nil {
		return spans, err
	}
	return spans, broken
}

// versionReader reads one version of an object at any offset, one ranged
// read through the store per read, kept nowhere: what header hops read
// through. It keeps the bytes of each read by offset; once fresh is set,
// reads before fresh are served from them (they passed their check) and
// reads from fresh on are fetched again.
type versionReader struct {
	ctx   context.Context
	src   *store.Source
	obj   store.Object
	hops  *atomic.Int64 // counts the reads
	seen  map[int64][]byte
	fresh int64 // 0: every read is fetched
}

func (r *versionReader) ReadAt(p []byte, off int64) (int, error) {
	if b, ok := r.seen[off]; ok && off < r.fresh && len(b) == len(p) {
		return copy(p, b), nil
	}
	r.hops.Add(1)
	n, err := r.src.ReadAt(r.ctx, r.obj, p, off, store.ReadOptions{Keep: store.KeepNone, CallerChecks: true})
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return n, io.EOF // the object is shorter than its size said
	}
	if err == nil {
		r.seen[off] = bytes.Clone(p[:n])
	}
	return n, err
}
