package formats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/format/lerobot"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/offline"
	"github.com/oxefs/oxefs/store"
)

// lerobotFormat reads LeRobot v3 datasets: a source with meta/info.json,
// or, offline, one whose files `oxefs warm` fetched.
var lerobotFormat = format.Format{
	Name:  lerobotName,
	Probe: probeLeRobot,
	Open:  openLeRobot,
	MissingOffline: func(src storage.Backend, env *format.Env) string {
		if _, ok := loadLeRobotRecord(env.Store, src); ok {
			return ""
		}
		return "its files and " + lerobotRecordName + ".json"
	},
	Synth: synthLeRobot,
}

const lerobotName = "LeRobot"

// offlineRemote reports whether src is read from what warm saved: the
// store is offline and src's objects are not local files.
func offlineRemote(src storage.Backend, env *format.Env) bool {
	local := storage.IsFiler(src)
	return env.Offline() && !local
}

// metadataReader is src as LeRobot reads its metadata: local files in
// place, a remote source through the store's decorators.
func metadataReader(src storage.Backend, env *format.Env) storage.Backend {
	if storage.IsFiler(src) {
		return src
	}
	return env.Store.Wrap(src)
}

// probeLeRobot looks for meta/info.json, or offline for warm's record. A
// source whose retries gave up on it (storage.ErrUnavailable: it does not
// answer) is the open's error: the RLDS probe would wait out a second
// retry budget on the same outage, and one open has one bound. Any other
// failure to say (missing, refused, an odd Stat) is not LeRobot: RLDS,
// the format a source was always read as, tries it, and its error (naming
// dataset_info.json) is the one reported.
func probeLeRobot(ctx context.Context, src storage.Backend, env *format.Env) (bool, error) {
	if offlineRemote(src, env) {
		_, ok := loadLeRobotRecord(env.Store, src)
		return ok, nil
	}
	_, err := metadataReader(src, env).Stat(ctx, lerobot.InfoPath)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, storage.ErrUnavailable) || ctx.Err() != nil:
		return false, err
	}
	return false, nil
}

// openLeRobot opens a LeRobot dataset, read through the store. Its video
// files' sample tables go to the Env's shared index; offline, its files
// come from the disk cache and their identities from warm's record.
func openLeRobot(ctx context.Context, name string, src storage.Backend, env *format.Env) (format.Dataset, error) {
	read := src // the dataset reads it through the store
	if offlineRemote(src, env) {
		rec, ok := loadLeRobotRecord(env.Store, src)
		if !ok {
			return nil, fmt.Errorf("dataset %s: offline, and oxefs warm has not fetched its files", src.Location())
		}
		files := env.Store.Source(src)
		if !files.Cached() {
			return nil, fmt.Errorf("dataset %s: offline, its files are read from the disk cache: %w", src.Location(), store.ErrNoDiskCache)
		}
		read = &snapshot{src: files, files: rec.Files}
	}
	d, err := lerobot.Open(ctx, name, read, lerobot.Options{Index: videoIndex(env), Store: env.Store})
	if err != nil {
		return nil, err
	}
	return &lerobotDataset{Dataset: d, src: src, store: env.Store}, nil
}

// lerobotShared is what the LeRobot datasets of one Env share: the sample
// tables of their video files.
type lerobotShared struct{ index *lerobot.IndexCache }

func (s *lerobotShared) IndexStats() format.IndexStats {
	st := s.index.Stats()
	return format.IndexStats{Bound: st.Bound, Bytes: st.Bytes, Files: st.Files, Hits: st.Hits, Parses: st.Parses, Evicted: st.Evicted}
}

// videoIndex is the Env's shared index, or nil (a cache per dataset)
// without a bound.
func videoIndex(env *format.Env) *lerobot.IndexCache {
	if env.IndexBytes <= 0 {
		return nil
	}
	s := env.Shared(lerobotName, func() any { return &lerobotShared{lerobot.NewIndexCache(env.IndexBytes)} })
	return s.(*lerobotShared).index
}

// lerobotDataset is a LeRobot dataset with the capabilities of package
// format.
type lerobotDataset struct {
	*lerobot.Dataset
	src   storage.Backend // the source as given to Open, before the store's decorators
	store *store.Store
}

var (
	_ format.Dataset        = (*lerobotDataset)(nil)
	_ format.LengthLoader   = (*lerobotDataset)(nil)
	_ format.Deriver        = (*lerobotDataset)(nil)
	_ format.Warmer         = (*lerobotDataset)(nil)
	_ format.OfflineChecker = (*lerobotDataset)(nil)
	_ format.Describer      = (*lerobotDataset)(nil)
	_ format.Named          = (*lerobotDataset)(nil)
	_ format.CameraSelector = (*lerobotDataset)(nil)
	_ format.Auditor        = (*lerobotDataset)(nil)
	_ format.EpisodeBytes   = (*lerobot.Episode)(nil)
)

// FormatName is "LeRobot".
func (d *lerobotDataset) FormatName() string { return lerobotName }

// Unwrap returns the LeRobot dataset itself, for tests and tools that
// read this one format.
func (d *lerobotDataset) Unwrap() *lerobot.Dataset { return d.Dataset }

// LoadLengths returns the lengths of the episode table.
func (d *lerobotDataset) LoadLengths() (map[string][]int32, error) { return d.Lengths(), nil }

// Audit finds the orphaned rows of the data files and the video files
// whose frames disagree with the episode table (see lerobot.Dataset.Audit).
func (d *lerobotDataset) Audit(ctx context.Context, ranges []episode.Range) ([]format.Finding, error) {
	found, err := d.Dataset.Audit(ctx, ranges)
	if err != nil {
		return nil, err
	}
	out := make([]format.Finding, len(found))
	for i, f := range found {
		kind := format.FrameCount
		if f.Kind == lerobot.OrphanRow {
			kind = format.OrphanRow
		}
		out[i] = format.Finding{Kind: kind, File: f.File, Detail: f.Detail}
		if key, ok := d.Key(f.Episode); ok {
			out[i].Episode = d.EpisodeID(key)
		}
	}
	return out, nil
}

// Describe describes the dataset for `oxefs inspect`.
func (d *lerobotDataset) Describe() fmt.Stringer { return d.Dataset.Describe() }

// LoadDerived reads a derived file from the store's index directory,
// under the dataset's Identity.
func (d *lerobotDataset) LoadDerived(ctx context.Context, name, key string) ([]byte, error) {
	return d.store.LoadDerived(d.Backend(), name, key, func() (string, error) { return d.Identity(ctx) })
}

// SaveDerived saves what LoadDerived reads.
func (d *lerobotDataset) SaveDerived(ctx context.Context, name, key string, b []byte) error {
	id, err := d.Identity(ctx)
	if err != nil {
		return err
	}
	return d.store.SaveDerived(d.Backend(), name, id, key, b)
}

// A remote LeRobot dataset is read offline from the disk cache: `oxefs
// warm` fetches every file its selections need whole (metadata, data and
// video files) and saves a record of each file's identity
// (storage.ObjectInfo) in the cache directory; an offline open reads the
// files from the cache and their identities from the record, and never
// contacts the source.

// lerobotRecord is what warm saved of a remote LeRobot source: every file
// fetched and its identity then.
type lerobotRecord struct {
	Files map[string]storage.ObjectInfo `json:"files"`
}

const (
	lerobotRecordName = "lerobot-offline"
	lerobotRecordKey  = "lerobot-offline-v1"
)

// loadLeRobotRecord returns warm's record for src, and false when there is
// none.
func loadLeRobotRecord(st *store.Store, src storage.Backend) (*lerobotRecord, bool) {
	b, err := st.LoadDerived(src, lerobotRecordName, lerobotRecordKey, func() (string, error) { return "", nil })
	if err != nil {
		return nil, false
	}
	var r lerobotRecord
	if err := json.Unmarshal(b, &r); err != nil || len(r.Files) == 0 {
		return nil, false
	}
	return &r, true
}

// snapshot is a remote LeRobot source as warm left it in the disk cache:
// files from the cache, identities from the record.
type snapshot struct {
	src   *store.Source // the source as the store reads it, with a disk cache
	files map[string]storage.ObjectInfo
}

func (s *snapshot) Location() string { return s.src.Location() }

// Stat is the identity the file had when warm fetched it; a file warm did
// not fetch is not cached.
func (s *snapshot) Stat(_ context.Context, name string) (storage.ObjectInfo, error) {
	if info, ok := s.files[name]; ok {
		return info, nil
	}
	return storage.ObjectInfo{}, &offline.NotCachedError{URI: s.Location(), Name: name}
}

// Open reads the cached file, of the version warm fetched (a
// *offline.NotCachedError when it is not cached).
func (s *snapshot) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	o, err := s.object(name)
	if err != nil {
		return nil, err
	}
	return s.src.Open(ctx, o, off, length)
}

// OpenFile opens the cached file, of the version warm fetched (a
// *offline.NotCachedError when it is not cached): a snapshot's files are
// local, read in place.
func (s *snapshot) OpenFile(ctx context.Context, name string) (storage.File, error) {
	o, err := s.object(name)
	if err != nil {
		return nil, err
	}
	return s.src.OpenFile(ctx, o)
}

// object is the named file as warm fetched it.
func (s *snapshot) object(name string) (store.Object, error) {
	info, ok := s.files[name]
	if !ok {
		return store.Object{}, &offline.NotCachedError{URI: s.Location(), Name: name}
	}
	return store.Object{Name: name, Size: info.Size, Version: info.Version}, nil
}

// Warm fetches, whole, every file reading ranges needs into the disk
// cache, then records the files' identities for an offline open. It does
// nothing for a local source (read in place); a remote source of a store
// without a disk cache is an error (store.ErrNoDiskCache).
func (d *lerobotDataset) Warm(ctx context.Context, ranges []episode.Range, progress func(done, total int)) (int, error) {
	cached := d.store.Source(d.src)
	if cached.InPlace() {
		return 0, nil
	}
	if !cached.Cached() {
		return 0, fmt.Errorf("dataset %s: warm: %s: %w", d.Name, d.src.Location(), store.ErrNoDiskCache)
	}
	files, err := d.Files(ranges)
	if err != nil {
		return 0, err
	}
	infos := make([]storage.ObjectInfo, len(files))
	var (
		mu   sync.Mutex // serialises progress
		done int
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, name := range files {
		g.Go(func() error {
			info, err := cached.Stat(gctx, name)
			if err != nil {
				return fmt.Errorf("dataset %s: %s: %w", d.Name, name, err)
			}
			// That version's bytes, whatever the source holds by now.
			f, err := cached.OpenFile(gctx, store.Object{Name: name, Size: info.Size, Version: info.Version})
			if err != nil {
				return fmt.Errorf("dataset %s: fetch %s: %w", d.Name, name, err)
			}
			f.Close()
			infos[i] = info
			mu.Lock()
			defer mu.Unlock()
			done++
			if progress != nil {
				progress(done, len(files))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return done, err
	}
	// Several datasets of a mix may read one source (other cameras, other
	// splits): the record keeps what each fetched.
	rec, ok := loadLeRobotRecord(d.store, d.src)
	if !ok {
		rec = &lerobotRecord{Files: make(map[string]storage.ObjectInfo, len(files))}
	}
	for i, name := range files {
		rec.Files[name] = infos[i]
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	return len(files), d.store.SaveDerived(d.src, lerobotRecordName, "", lerobotRecordKey, b)
}

// MissingOffline lists what the disk cache lacks of the files reading
// ranges needs; nothing for a local source, and everything for a store
// without a disk cache.
func (d *lerobotDataset) MissingOffline(_ context.Context, ranges []episode.Range) []string {
	cached := d.store.Source(d.src)
	if cached.InPlace() {
		return nil
	}
	if !cached.Cached() {
		return []string{"its files: there is no disk cache to keep them"}
	}
	rec, ok := loadLeRobotRecord(d.store, d.src)
	if !ok {
		return []string{"its files: oxefs warm has not fetched them"}
	}
	files, err := d.Files(ranges)
	if err != nil {
		return []string{err.Error()}
	}
	var lack []string
	for _, f := range files {
		if info, ok := rec.Files[f]; !ok || !cached.Contains(store.Object{Name: f, Size: info.Size, Version: info.Version}) {
			lack = append(lack, f)
		}
	}
	if n := len(lack); n > 0 {
		return []string{fmt.Sprintf("%d of the %d files of its selections: %s", n, len(files), listed(lack))}
	}
	return nil
}
