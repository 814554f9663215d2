package loader

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format/lerobot"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/diskcache"
	"github.com/oxefs/oxefs/storage/offline"
	"github.com/oxefs/oxefs/store"
)

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
	cached *diskcache.Backend
	files  map[string]storage.ObjectInfo
}

func (s *snapshot) Location() string { return s.cached.Location() }

// Stat is the identity the file had when warm fetched it; a file warm did
// not fetch is not cached.
func (s *snapshot) Stat(_ context.Context, name string) (storage.ObjectInfo, error) {
	if info, ok := s.files[name]; ok {
		return info, nil
	}
	return storage.ObjectInfo{}, &offline.NotCachedError{URI: s.Location(), Name: name}
}

// Open reads the cached file (a *offline.NotCachedError when it is not).
func (s *snapshot) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	return s.cached.Open(ctx, name, off, length)
}

// OpenFile opens the cached file (a *offline.NotCachedError when it is
// not): a snapshot's files are local, read in place.
func (s *snapshot) OpenFile(ctx context.Context, name string) (storage.File, error) {
	return s.cached.OpenFile(ctx, name)
}

// Ranges returns the episodes the dataset's views read: its train
// selection, and its val split when it has one.
func (d *Dataset) Ranges() ([]episode.Range, error) {
	out := slices.Clone(d.Train)
	if d.Config.ValSplit != "" {
		val, err := d.Data.Select(d.Config.ValSplit)
		if err != nil {
			return nil, err
		}
		out = append(out, val...)
	}
	return out, nil
}

// WarmLeRobot fetches, whole, every file reading d's selections needs into
// the disk cache, then records the files' identities for an offline open.
// It does nothing for a local source (read in place). progress, when set,
// is told each file done, with the total, one call at a time. It returns
// the files in the cache.
func WarmLeRobot(ctx context.Context, d *Dataset, st *store.Store, progress func(done, total int)) (int, error) {
	lr, ok := d.Data.(*lerobot.Dataset)
	if !ok {
		return 0, fmt.Errorf("dataset %s is not a LeRobot dataset", d.Config.Name)
	}
	src, err := storage.Open(ctx, d.Config.Source, sourceOptions(&d.Config, false))
	if err != nil {
		return 0, err
	}
	cached := st.Cached(src)
	if cached == nil {
		return 0, nil
	}
	ranges, err := d.Ranges()
	if err != nil {
		return 0, err
	}
	files, err := lr.Files(ranges)
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
				return fmt.Errorf("dataset %s: %s: %w", d.Config.Name, name, err)
			}
			f, err := cached.OpenFile(gctx, name)
			if err != nil {
				return fmt.Errorf("dataset %s: fetch %s: %w", d.Config.Name, name, err)
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
	rec, ok := loadLeRobotRecord(st, src)
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
	return len(files), st.SaveDerived(src, lerobotRecordName, "", lerobotRecordKey, b)
}

// openLeRobotOffline opens the remote LeRobot dataset at src from what warm
// left in the disk cache; ok is false when warm left nothing for src.
func openLeRobotOffline(ctx context.Context, name string, src storage.Backend, st *store.Store, index *lerobot.IndexCache) (data Data, ok bool, err error) {
	rec, ok := loadLeRobotRecord(st, src)
	if !ok {
		return nil, false, nil
	}
	d, err := lerobot.Open(ctx, name, &snapshot{cached: st.Cached(src), files: rec.Files}, lerobot.Options{Index: index, Store: st})
	return d, true, err
}

// missingLeRobot lists what the disk cache lacks of the files reading the
// opened LeRobot dataset's selections needs, or nil when it is local.
func missingLeRobot(ctx context.Context, o opened, st *store.Store) []string {
	lr, ok := o.ds.Data.(*lerobot.Dataset)
	if !ok {
		return nil
	}
	src, err := storage.Open(ctx, o.ds.Config.Source, sourceOptions(&o.ds.Config, true))
	if err != nil {
		return []string{err.Error()}
	}
	cached := st.Cached(src)
	if cached == nil {
		return nil
	}
	rec, ok := loadLeRobotRecord(st, src)
	if !ok {
		return []string{"its files: oxefs warm has not fetched them"}
	}
	files, err := lr.Files(append(slices.Clone(o.train), o.val...))
	if err != nil {
		return []string{err.Error()}
	}
	var lack []string
	for _, f := range files {
		if _, ok := rec.Files[f]; !ok || !cached.Contains(f) {
			lack = append(lack, f)
		}
	}
	if n := len(lack); n > 0 {
		listed := strings.Join(lack[:min(n, maxListed)], ", ")
		if n > maxListed {
			listed += fmt.Sprintf(" and %d more", n-maxListed)
		}
		return []string{fmt.Sprintf("%d of the %d files of its selections: %s", n, len(files), listed)}
	}
	return nil
}
