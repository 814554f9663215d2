package rlds

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"sync"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/episode/splitspec"
	"github.com/oxefs/oxefs/format/rlds/example"
	"github.com/oxefs/oxefs/format/rlds/tfds"
	"github.com/oxefs/oxefs/format/rlds/tfrecord"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/store"
)

// maxRecord bounds one TFRecord (one episode): a corrupt length field must
// not make us allocate more.
const maxRecord = 1 << 30

// Dataset is one opened TFDS dataset.
type Dataset struct {
	// Name is the name used in episode ids and messages.
	Name   string
	Source storage.Backend
	// Meta and Features are the dataset's dataset_info.json and
	// features.json; only this format reads them. Everything above the
	// format sees Info.
	Meta     *tfds.DatasetInfo
	Features *tfds.Features
	info     *episode.Info

	neutral []episode.Feature // Features in the neutral model, same order

	store *store.Store
	// src reads Source through the store: metadata with retries, at the
	// store's rate limit (remote), shards in place when they are local
	// files, through the disk cache otherwise.
	src     *store.Source
	remote  storage.Backend
	infoSum [32]byte // SHA-256 of dataset_info.json as read
	// infoJSON and featJSON are the metadata as read, for SaveOffline.
	infoJSON, featJSON []byte
	// saved is each shard's ObjectInfo as SaveOffline recorded it, by file
	// name, when the dataset was opened offline; nil otherwise.
	saved map[string]storage.ObjectInfo

	mu sync.Mutex
	// objects is each remote shard's identity as this dataset first met
	// it (shardObject): the version every whole-shard read of it names.
	objects map[string]store.Object // guarded by mu: by shard file name
	spans   map[string]*shardSpans  // guarded by mu: by shard file name
	hops    map[string]*hopIndex    // guarded by mu: remote shards indexed by header hops
	missing map[string]bool         // guarded by mu: shards reported missing

	checked checkedRecords // records whose data CRC passed, by file
}

type shardSpans struct {
	ready chan struct{}
	spans []tfrecord.Span
	// broken is the framing error that ended the index early (a truncated
	// or corrupt shard); records from len(spans) on are unreadable.
	broken error
	err    error // the shard could not be opened at all
}

// MaxMetadataBytes bounds dataset_info.json and features.json: they are
// read whole and parsed in memory, and kept for SaveOffline, so a file
// past the bound (TFDS writes a few KB to a few hundred; a 300 MB one
// took 875 MB of RSS) is refused, naming the file and both sizes, instead
// of growing the daemon past --mem.
const MaxMetadataBytes = 16 << 20

// Open reads a dataset's dataset_info.json and features.json through the
// store's stack. name overrides the dataset's own name in ids and messages
// when not empty. A remote source needs a store with a disk cache.
func Open(ctx context.Context, s *store.Store, name string, src storage.Backend) (*Dataset, error) {
	sc := s.Source(src)
	remote := sc.Backend()
	inPlace := storage.IsFiler(src)
	var (
		infoJSON, featJSON []byte
		saved              map[string]storage.ObjectInfo
		err                error
	)
	if s.Offline() && !inPlace {
		infoJSON, featJSON, saved, err = readSaved(s, src)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %w", src.Location(), err)
		}
	} else if infoJSON, err = storage.ReadFileMax(ctx, remote, "dataset_info.json", MaxMetadataBytes); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", src.Location(), withSourceHint(src, err))
	}
	info, err := tfds.ParseDatasetInfo(infoJSON)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: dataset_info.json: %w", src.Location(), err)
	}
	if info.FileFormat != "" && info.FileFormat != "tfrecord" {
		return nil, fmt.Errorf("dataset %s: file format %q is not supported (valid: tfrecord)", src.Location(), info.FileFormat)
	}
	if featJSON == nil {
		if featJSON, err = storage.ReadFileMax(ctx, remote, "features.json", MaxMetadataBytes); err != nil {
			return nil, fmt.Errorf("dataset %s: %w", src.Location(), err)
		}
	}
	feats, err := tfds.ParseFeatures(featJSON)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: features.json: %w", src.Location(), err)
	}
	perStep := false
	for _, f := range feats.All() {
		perStep = perStep || f.PerStep
	}
	if !perStep {
		return nil, fmt.Errorf("dataset %s: not an RLDS dataset: features.json has no `steps` features", src.Location())
	}
	if name == "" {
		name = info.Name
	}
	d := &Dataset{
		Name:     name,
		Source:   src,
		Meta:     info,
		Features: feats,
		neutral:  neutralFeatures(feats),
		store:    s,
		src:      sc,
		remote:   remote,
		infoSum:  sha256.Sum256(infoJSON),
		infoJSON: infoJSON,
		featJSON: featJSON,
		saved:    saved,
		objects:  make(map[string]store.Object),
		spans:    make(map[string]*shardSpans),
		hops:     make(map[string]*hopIndex),
		missing:  make(map[string]bool),
	}
	if !inPlace && !sc.Cached() {
		return nil, fmt.Errorf("dataset %s: a remote source needs a disk cache", src.Location())
	}
	if d.info, err = d.describe(); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", src.Location(), err)
	}
	return d, nil
}

// Info describes the dataset in the format-neutral model.
func (d *Dataset) Info() *episode.Info { return d.info }

// Backend is the source the dataset is read from.
func (d *Dataset) Backend() storage.Backend { return d.Source }

// describe converts dataset_info.json and features.json to the neutral model.
func (d *Dataset) describe() (*episode.Info, error) {
	feats, err := episode.NewFeatures(d.neutral)
	if err != nil {
		return nil, err
	}
	in := &episode.Info{Name: d.Name, Builder: d.Meta.Name, Version: d.Meta.Version, Format: "rlds",
		Location: d.Source.Location(), Features: feats}
	for _, s := range d.Meta.Splits {
		in.Splits = append(in.Splits, episode.Split{Name: s.Name, Bytes: s.NumBytes, ShardEpisodes: s.ShardLengths})
	}
	return in, nil
}

// Resolve resolves a TFDS split string exactly as tfds.load(split=...)
// does; its errors name the split string and the valid splits.
func (d *Dataset) Resolve(spec string) ([]episode.Range, error) {
	return splitspec.Resolve(spec, d.info.Splits)
}

// Select resolves a TFDS split string, as Resolve (format.Dataset's
// method: its caller names the dataset, as a mix config error does with
// the entry's name and line).
func (d *Dataset) Select(spec string) ([]episode.Range, error) {
	return d.Resolve(spec)
}

// ShardName returns the file name of a shard.
func (d *Dataset) ShardName(split string, shard int) (string, error) {
	names, err := d.Meta.ShardNames(split)
	if err != nil {
		return "", fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	if shard < 0 || shard >= len(names) {
		return "", fmt.Errorf("dataset %s split %s: shard %d out of range (0..%d)", d.Name, split, shard, len(names)-1)
	}
	return names[shard], nil
}

// EpisodeID returns the stable id of an episode.
func (d *Dataset) EpisodeID(ref Ref) string {
	return d.Name + "/" + ref.Split + "/" + strconv.Itoa(ref.Shard) + "/" + strconv.Itoa(ref.Record)
}

// Episode loads and parses one episode (no caching: see store.Store). A load
// stops when ctx is done.
func (d *Dataset) Episode(ctx context.Context, ref Ref) (episode.Episode, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ep, err := d.load(ctx, ref)
	if err != nil {
		return nil, err
	}
	return ep, nil
}

// load reads and parses one record.
func (d *Dataset) load(ctx context.Context, ref Ref) (*Episode, error) {
	name, err := d.ShardName(ref.Split, ref.Shard)
	if err != nil {
		return nil, err
	}
	corrupt := func(err error) error {
		return &episode.CorruptError{Dataset: d.Name, Shard: name, Record: ref.Record, Err: err}
	}
	var (
		f    shardFile
		span tfrecord.Span
		base int64
		raw  []byte
		bad  error // what the record's check says of its bytes
	)
	err = d.src.Recheck(ctx, func() error {
		if f != nil {
			f.Close()
		}
		var err error
		if f, span, base, err = d.openRecord(ctx, ref, name); err != nil {
			f = nil
			return err
		}
		if raw == nil {
			raw = records.get(int(span.Len) + tfrecord.FooterLen)
		}
		raw, bad = d.readRecord(f, span, ref.Record, raw)
		if rf, ok := f.(*recordFile); ok && bad != nil {
			// Checked as it arrived, it fails as it is read back (damaged
			// on disk, or kept by a build that did not check): the store
			// decides whether to fetch it again.
			return &store.Suspect{Object: rf.obj, Extent: store.Extent{Off: rf.off, Len: rf.n}, Err: bad}
		}
		return nil
	})
	if f != nil {
		defer f.Close()
	}
	if err == nil {
		err = bad
	} else if !errors.Is(err, bad) {
		if raw != nil {
			records.put(raw)
		}
		return nil, err
	}
	if err != nil {
		records.put(raw)
		return nil, corrupt(atShardOffset(err, base))
	}
	d.store.Stats.BytesRead.Add(int64(len(raw)))
	ex, err := example.Parse(raw)
	if err != nil {
		records.put(raw)
		return nil, corrupt(err)
	}
	steps, err := stepCount(ex, d.Features)
	if err != nil {
		records.put(raw)
		return nil, corrupt(err)
	}
	d.store.Stats.EpisodesLoaded.Add(1)
	held := cap(raw) + 64*ex.Len() + 256
	ep := newEpisode(d.EpisodeID(ref), d.Name, ref, steps, ex, d.Features, d.neutral, name, held)
	ep.rec = &record{buf: raw, pool: records}
	ep.rec.refs.Store(1) // the loader's hold, given to the caller
	return ep, nil
}

// readRecord reads record rec of the shard file f, at span, into buf: its
// data CRC is computed on the first load of the record from this version
// of the file in the daemon's life, and skipped after it has passed (see
// checkedRecords).
func (d *Dataset) readRecord(f shardFile, span tfrecord.Span, rec int, buf []byte) ([]byte, error) {
	id, known := identify(f)
	if known && d.checked.passed(id, rec) {
		d.checked.Skipped.Add(1)
		return tfrecord.ReadRecordKnown(f, span, buf)
	}
	raw, err := tfrecord.ReadRecord(f, span, buf)
	if err == nil && known {
		d.checked.pass(id, rec)
	}
	return raw, err
}

// openRecord opens the file that holds record ref of the named shard and
// returns it with the record's span in it and the offset of that file in
// the shard: a local shard, a whole shard in the disk cache (preferred), or
// the record alone, fetched into the disk cache (see ranged.go). A shard
// that is missing, or that holds no such record, is reported here.
func (d *Dataset) openRecord(ctx context.Context, ref Ref, name string) (shardFile, tfrecord.Span, int64, error) {
	corrupt := func(err error) error {
		return &episode.CorruptError{Dataset: d.Name, Shard: name, Record: ref.Record, Err: err}
	}
	missing := func(err error) error {
		// Listed but not there: unreadable data, never "no such file".
		d.reportMissing(name, err)
		return corrupt(fmt.Errorf("%w: %v", episode.ErrMissingShard, err))
	}
	var (
		f    shardFile
		size int64
		err  error
	)
	if d.src.Cached() {
		var o store.Object
		if o, err = d.shardObject(ctx, name); errors.Is(err, fs.ErrNotExist) {
			return nil, tfrecord.Span{}, 0, missing(err)
		} else if err != nil {
			return nil, tfrecord.Span{}, 0, err
		}
		var whole storage.File
		whole, err = d.src.OpenCached(o)
		if errors.Is(err, fs.ErrNotExist) {
			f, s, base, err := d.openRemoteRecord(ctx, ref, name)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, tfrecord.Span{}, 0, missing(err)
			}
			if _, reported := errors.AsType[*episode.CorruptError](err); !reported {
				if ce, ok := errors.AsType[*tfrecord.CorruptError](err); ok {
					return nil, tfrecord.Span{}, 0, corrupt(ce) // the record's bytes are bad
				}
			}
			return f, s, base, err
		}
		if err != nil {
			return nil, tfrecord.Span{}, 0, fmt.Errorf("dataset %s shard %s: %w", d.Name, name, err)
		}
		f, size = whole, whole.Size()
	} else {
		f, size, err = d.openShard(ctx, name, false)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, tfrecord.Span{}, 0, missing(err)
		}
		if err != nil {
			return nil, tfrecord.Span{}, 0, err
		}
	}
	sp, err := d.shardIndex(name, f, size)
	if err == nil {
		var s tfrecord.Span
		if s, err = d.recordSpan(ref, name, sp.spans, sp.broken, size); err == nil {
			return f, s, 0, nil
		}
	}
	f.Close()
	return nil, tfrecord.Span{}, 0, err
}

// recordSpan returns the span of record ref in a shard of size bytes
// indexed as spans (broken: the framing error that ended the index).
func (d *Dataset) recordSpan(ref Ref, name string, spans []tfrecord.Span, broken error, size int64) (tfrecord.Span, error) {
	corrupt := func(err error) error {
		return &episode.CorruptError{Dataset: d.Name, Shard: name, Record: ref.Record, Err: err}
	}
	if ref.Record < 0 {
		return tfrecord.Span{}, fmt.Errorf("dataset %s shard %s: record %d out of range", d.Name, name, ref.Record)
	}
	if ref.Record >= len(spans) {
		if broken != nil {
			return tfrecord.Span{}, corrupt(fmt.Errorf("unreadable: the shard's framing breaks after record %d: %w", len(spans)-1, broken))
		}
		// Cut at a record boundary, or dataset_info.json lists more.
		listed := int64(-1)
		if si, ok := d.Meta.Split(ref.Split); ok && ref.Shard < len(si.ShardLengths) {
			listed = si.ShardLengths[ref.Shard]
		}
		return tfrecord.Span{}, corrupt(fmt.Errorf("unreadable: the shard holds %d records (%d bytes), dataset_info.json lists %d",
			len(spans), size, listed))
	}
	return spans[ref.Record], nil
}

// shardFile is an open shard: a local file or a disk cache entry.
type shardFile interface {
	io.ReaderAt
	io.Closer
}

// openShard opens a shard in place for sources whose files are local (a
// storage.Filer), through the disk cache otherwise. A background (prefetch)
// download yields to downloads that readers wait for.
func (d *Dataset) openShard(ctx context.Context, name string, background bool) (shardFile, int64, error) {
	open := d.src.OpenFile
	if background {
		open = d.src.OpenFileBackground
	}
	var (
		f   storage.File
		err error
	)
	if !d.src.Cached() {
		f, err = open(ctx, store.Object{Name: name}) // in place
	} else {
		for range versionTries {
			var o store.Object
			if o, err = d.shardObject(ctx, name); err != nil {
				break
			}
			if f, err = open(ctx, o); !errors.Is(err, storage.ErrVersionGone) {
				break
			}
			d.forgetObject(name, o) // rewritten and its old version gone: the new one
		}
	}
	switch {
	case err != nil && !d.src.Cached():
		return nil, 0, fmt.Errorf("dataset %s: %w", d.Name, err)
	case err != nil:
		return nil, 0, fmt.Errorf("dataset %s shard %s: %w", d.Name, name, err)
	}
	return f, f.Size(), nil
}

// shardObject returns the identity of the named shard of a remote source
// that this dataset reads: asked once (of the source, through the disk
// cache's failure memo, or, offline, of warm's record) and kept, so that
// every whole-shard read of a daemon names the version it met first, and
// the disk cache serves that version's copy and no other. A version found
// gone is forgotten (forgetObject) and the next read asks again.
func (d *Dataset) shardObject(ctx context.Context, name string) (store.Object, error) {
	d.mu.Lock()
	o, ok := d.objects[name]
	d.mu.Unlock()
	if ok {
		return o, nil
	}
	if d.saved != nil {
		info, err := d.statShard(ctx, name)
		if err != nil {
			return store.Object{}, err
		}
		o = store.Object{Name: name, Size: info.Size, Version: info.Version}
	} else {
		info, err := d.src.Stat(ctx, name)
		if err != nil {
			return store.Object{}, fmt.Errorf("dataset %s shard %s: %w", d.Name, name, err)
		}
		o = store.Object{Name: name, Size: info.Size, Version: info.Version}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if prev, ok := d.objects[name]; ok {
		return prev, nil
	}
	d.objects[name] = o
	return o, nil
}

// forgetObject drops the identity of the named shard, when it is still o,
// and the record spans indexed from its bytes: that version is gone.
func (d *Dataset) forgetObject(name string, o store.Object) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cur, ok := d.objects[name]; ok && cur == o {
		delete(d.objects, name)
		delete(d.spans, name)
	}
}

// reportMissing logs a listed shard that is not there, once per shard.
func (d *Dataset) reportMissing(name string, err error) {
	d.mu.Lock()
	seen := d.missing[name]
	d.missing[name] = true
	d.mu.Unlock()
	if !seen {
		d.store.Log().Warn("shard listed in dataset_info.json is missing: its episodes are unreadable data",
			"dataset", d.Name, "shard", name, "err", err)
	}
}

// shardIndex returns the record spans of a shard, indexing it on first use.
func (d *Dataset) shardIndex(name string, f io.ReaderAt, size int64) (*shardSpans, error) {
	d.mu.Lock()
	sp, ok := d.spans[name]
	if !ok {
		sp = &shardSpans{ready: make(chan struct{})}
		d.spans[name] = sp
	}
	d.mu.Unlock()
	if ok {
		<-sp.ready
		return sp, sp.err
	}
	defer close(sp.ready)
	sp.spans, sp.broken = tfrecord.Index(f, size)
	if sp.broken != nil {
		d.store.Log().Warn("corrupt shard framing", "dataset", d.Name, "shard", name,
			"readable_records", len(sp.spans), "err", sp.broken)
	}
	return sp, nil
}

// Splits returns the names of the dataset's splits.
func (d *Dataset) Splits() []string {
	names := make([]string, len(d.Meta.Splits))
	for i, s := range d.Meta.Splits {
		names[i] = s.Name
	}
	return names
}

// indexDir is where persistent per-dataset indexes live.
func (d *Dataset) indexDir() string { return d.store.Dir(d.Source) }

var _ episode.Dataset = (*Dataset)(nil)
