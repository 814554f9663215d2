// Package diskcache is the storage decorator that keeps whole objects
// (shards) of remote backends on the local disk, under one directory
// bounded by a byte budget, evicting the least recently used. Wrapped
// around any storage.Backend (Cache.Wrap), it presents the cached objects
// as local files (storage.Filer), so the episode store reads a remote shard
// exactly as it reads a local one. Parts of objects (single records of a
// shard, an episode's bytes of a video, blocks of a data file) can be
// cached too, as entries of their own (Backend.openRange), under the same
// budget, LRU and locks.
//
// A versioned ranged read (Backend.ReadAt, Backend.OpenAt: an object's
// name, version, offset and length) is the one call the formats' reads
// come to, through package store: the cache decides whether the bytes
// come from the whole cached object, a download under way, a cached range
// or block, or the source, pinned to the version and yielding to more
// urgent readers (reader.go). Callers say what the bytes are for
// (ReadOptions), never how to get them.
//
// It owns the cache directory's layout, the cross-process locks (flock)
// that let several daemons share it, the LRU eviction, the handling of a
// full filesystem (ENOSPC), the cleanup of temp files left by crashed
// processes, the priorities by which fills share the bandwidth (see
// WithPriority: the batch a reader waits for first, prefetches last), and
// the memo of recent fetch failures. It imports only package storage of
// oxefs.
//
// A large object (32 MiB and more), and any prefetched one, is fetched as
// ranged slices, several at once, each its own request to the wrapped
// backend and each pinned to the version found before; its identity
// (storage.ObjectInfo) is asked before and after, so that bytes of two
// versions are never kept. Ranges of that version already cached are
// copied instead of fetched. The bytes a fill has written are readable in
// this process before it completes (ReadFilling), so a reader need not wait
// for a whole shard; the cache directory only ever shows complete objects.
//
// Nothing is kept unchecked that can be checked (verify.go): a whole
// object against the checksum its source publishes
// (storage.ObjectInfo.Checksum), a range by its read's Check; bytes that
// fail are fetched again, never kept.
package diskcache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oxefs/oxefs/internal/bytesize"
	"github.com/oxefs/oxefs/storage"
)

// Cache keeps whole files (shards) under one directory, bounded by a
// byte budget, evicting the least recently used.
//
// Layout under the cache directory:
//
//	files/KEY        complete objects; only ever appear by rename
//	files/KEY.lock   per-key lock files (flock), held while KEY is filled
//	tmp/             objects being written; never read
//	evict.lock       held while a process evicts
//
// Several processes may share one directory: a fill takes the key's flock,
// so one process downloads while the others wait and then read its result
// (a prefetch fill lets go of the flock while it pauses for readers, so no
// process ever waits on another's paused fill);
// eviction takes a directory-wide flock and orders files by mtime, which every
// reader refreshes on use. A file evicted while another process has it open
// stays readable through that open descriptor (POSIX unlink semantics).
type Cache struct {
	// constants
	dir    string
	budget int64
	log    *slog.Logger

	mu     sync.Mutex
	fills  map[string]*fill // guarded by mu: in-process fills in flight
	pinned map[string]int   // guarded by mu: keys with open entries here
	// progress is closed, and replaced, whenever a fill here writes bytes
	// or its sink comes or goes; guarded by mu.
	progress chan struct{}
	gate     *gate
	// failures remembers the objects whose fetch gave up, for a while.
	failures *failMemo
	// slicing is how Backend fills download large objects.
	slicing slicing
	// refetch bounds the fetches of bytes that failed a check (verify.go).
	refetch refetchPolicy
	// verifyRanges is a VerifyRanges: how a ranged read with no Check is
	// verified (agree.go).
	verifyRanges atomic.Int32

	Stats Stats
}

// Stats counts disk cache traffic.
type Stats struct {
	Hits, Misses, Evictions, BytesWritten atomic.Int64
	// RangesReused counts the cached ranges (openRange) that whole-object
	// downloads copied instead of fetching; Abandoned the requests that
	// paused fills abandoned (see newPreemptible).
	RangesReused, Abandoned atomic.Int64
	// RangesFetched and RangeBytes count the ranged reads (ReadAt, OpenAt)
	// that fetched their bytes from the source and the bytes they fetched;
	// RangesFromFill those copied from a whole-object download under way
	// instead.
	RangesFetched, RangeBytes, RangesFromFill atomic.Int64
	// Verified counts the whole objects checked against their source's
	// checksum before they were kept; Damaged the downloads and ranged
	// fetches whose bytes failed a check (a checksum, a format's Check)
	// and were fetched again; Rejected the reads that gave up after
	// refetchPolicy.tries such fetches, keeping nothing (see verify.go).
	Verified, Damaged, Rejected atomic.Int64
	// Compared counts the ranges with no Check that were kept or served
	// once two copies agreed (VerifyTwice).
	Compared atomic.Int64
}

type fill struct {
	done chan struct{}
	err  error

	// prio is the priority of the most urgent reader that waited on the
	// fill (see WithPriority), or Background.
	prio priority

	// sink is where the fill writes, once it holds the key's lock and its
	// temp file; guarded by Cache.mu. ReadFilling reads through it.
	sink *sink
}

// FillFunc writes a whole object to w. It is called at most once at a time
// per key, across every process sharing the cache directory. Before writing
// it may call reserve with the object's size, to make room ahead of the
// download and to refuse an object larger than the whole budget.
type FillFunc func(ctx context.Context, w io.Writer, reserve func(size int64) error) error

// Open opens (creating) a cache directory bounded by budget bytes.
// Temporary files left by crashed processes are removed. A budget larger
// than the filesystem can hold (its free space plus the files already
// cached) is lowered to that, with a warning. A fill through a wrapped
// backend (see Wrap) that gives up (storage.ErrUnavailable) is remembered
// for failMemo, during which the fills of that object fail at once with
// that error; zero remembers nothing.
func Open(dir string, budget int64, log *slog.Logger, failMemo time.Duration) (*Cache, error) {
	if budget <= 0 {
		return nil, fmt.Errorf("disk cache %s: budget must be positive, got %d", dir, budget)
	}
	for _, sub := range []string{"files", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("disk cache: %w", err)
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cache{
		dir:      dir,
		budget:   budget,
		log:      log,
		fills:    make(map[string]*fill),
		pinned:   make(map[string]int),
		progress: make(chan struct{}),
		gate:     newGate(),
		failures: newFailMemo(failMemo),
		slicing:  defaultSlicing,
		refetch:  defaultRefetch,
	}
	c.removeStaleTemps()
	var err error
	if c.budget, err = clampBudget(dir, budget, c.heldBytes(), log); err != nil {
		return nil, err
	}
	return c, nil
}

// Dir returns the cache directory.
func (c *Cache) Dir() string { return c.dir }

// Budget returns the byte bound.
func (c *Cache) Budget() int64 { return c.budget }

// Entry is an open cached object. It is pinned against eviction by this
// process until Close.
type Entry struct {
	*os.File
	size int64
	key  string
	c    *Cache
	once sync.Once
}

// Size returns the object's size in bytes.
func (e *Entry) Size() int64 { return e.size }

// Close closes the file and unpins the key.
func (e *Entry) Close() error {
	var err error
	e.once.Do(func() {
		err = e.File.Close()
		e.c.mu.Lock()
		if e.c.pinned[e.key]--; e.c.pinned[e.key] <= 0 {
			delete(e.c.pinned, e.key)
		}
		e.c.mu.Unlock()
	})
	return err
}

// OpenBackground is Open for prefetching: the fill it starts has the
// priority Background, so it pauses whenever a reader waits on the source
// (unless a reader waits on it too), and the call itself counts as no
// reader.
func (c *Cache) OpenBackground(ctx, fillCtx context.Context, key string, fn FillFunc) (*Entry, error) {
	return c.open(ctx, fillCtx, key, fn, true)
}

// Open returns the object stored under key, calling fn to create it when it
// is absent. The fill runs under fillCtx (the daemon's context),
// so one caller giving up through ctx does not cancel it for the others.
// The caller waits as a reader of ctx's priority (see WithPriority): fills
// less urgent than it pause meanwhile.
func (c *Cache) Open(ctx, fillCtx context.Context, key string, fn FillFunc) (*Entry, error) {
	return c.open(ctx, fillCtx, key, fn, false)
}

func (c *Cache) open(ctx, fillCtx context.Context, key string, fn FillFunc, background bool) (*Entry, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	// Another process sharing the directory may evict the file between its
	// fill and our open; fill it again, a few times.
	const tries = 3
	for range tries {
		e, err := c.openOnce(ctx, fillCtx, key, fn, background)
		if !errors.Is(err, errGone) {
			return e, err
		}
	}
	return nil, fmt.Errorf("disk cache %s: evicted by another process right after each of %d fills; "+
		"the processes sharing %s need a larger --disk", key, tries, c.dir)
}

// errGone is a file evicted between its fill and the open that follows.
var errGone = errors.New("evicted right after its fill")

func (c *Cache) openOnce(ctx, fillCtx context.Context, key string, fn FillFunc, background bool) (*Entry, error) {
	if e, err := c.openExisting(key); err == nil {
		c.Stats.Hits.Add(1)
		return e, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	c.Stats.Misses.Add(1)

	// A reader is registered before any fill it may start runs.
	prio := Background
	if !background {
		prio = PriorityOf(ctx)
		defer c.gate.enter(prio)()
	}
	c.mu.Lock()
	f, running := c.fills[key]
	if !running {
		f = &fill{done: make(chan struct{})}
		f.prio.p.Store(prio)
		c.fills[key] = f
		go func() {
			// The source's reads carry the fill's priority, which rises
			// as more urgent readers wait on it (for a rate limit).
			f.err = c.fill(storage.WithPriorityFunc(fillCtx, f.prio.p.Load), key, f, fn)
			c.mu.Lock()
			delete(c.fills, key)
			c.mu.Unlock()
			close(f.done)
		}()
	}
	c.mu.Unlock()

	if running && f.prio.raise(prio) {
		c.gate.poke()
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if f.err != nil {
		return nil, f.err
	}
	e, err := c.openExisting(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errGone
	}
	return e, err
}

// Wait returns once no fill runs in this process: every fill started here
// has published its file or removed its temp file and let go of its lock.
// Fills end when their fillCtx does, so a caller that cancelled the
// fillCtx of every backend it wrapped (see Wrap) waits only for them to
// notice.
func (c *Cache) Wait() {
	for {
		c.mu.Lock()
		var f *fill
		for _, f = range c.fills {
			break
		}
		c.mu.Unlock()
		if f == nil {
			return
		}
		<-f.done
	}
}

// Contains reports whether key is cached, without touching its LRU position.
func (c *Cache) Contains(key string) bool {
	_, err := os.Stat(c.path(key))
	return err == nil
}

func (c *Cache) path(key string) string {
	return filepath.Join(c.dir, "files", filepath.FromSlash(key))
}

func (c *Cache) openExisting(key string) (*Entry, error) {
	p := c.path(key)
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // LRU order; a failure only ages the entry
	c.mu.Lock()
	c.pinned[key]++
	c.mu.Unlock()
	return &Entry{File: f, size: st.Size(), key: key, c: c}, nil
}

// fill creates key under its cross-process lock.
func (c *Cache) fill(ctx context.Context, key string, f *fill, fn FillFunc) error {
	p := c.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	unlock, err := lockFile(ctx, p+".lock")
	if err != nil {
		return fmt.Errorf("disk cache %s: %w", key, err)
	}
	defer func() { unlock() }() // yield may have swapped it
	if _, err := os.Stat(p); err == nil {
		return nil // another process filled it while we waited
	}
	tmp, err := c.createTemp()
	if err != nil {
		return fmt.Errorf("disk cache %s: %w", key, err)
	}
	// cw, the fill's sink, is recreated for the second write after a full
	// filesystem; readers see each through f.sink until the temp closes.
	var cw *sink
	setSink := func(s *sink) {
		c.mu.Lock()
		f.sink = s
		c.wakeLocked()
		c.mu.Unlock()
		if cw != nil {
			cw.close()
		}
		cw = s
	}
	defer func() {
		setSink(nil)
		tmp.Close()
		os.Remove(tmp.Name()) // no-op after a successful rename
	}()
	var reserved int64
	reserve := func(size int64) error {
		if size > c.budget {
			return fmt.Errorf("disk cache: %s is %d bytes, more than the whole --disk budget of %d bytes", key, size, c.budget)
		}
		reserved = size
		return c.evict(size, key)
	}
	// A fill yields to the readers more urgent than it (see WithPriority).
	// It lets go of the key's lock while it pauses: a reader in another
	// process may be waiting for that lock, and that process's own paused
	// fill may hold the lock this process's reader waits for. A fill
	// that holds the lock therefore only ever waits on its source, and no
	// wait cycle can form between processes. If another process fills the
	// key during the pause, this fill stops and uses that file.
	mustPause := func() (bool, <-chan struct{}) { return c.gate.mustPause(&f.prio) }
	yield := func() error {
		if pause, _ := mustPause(); !pause {
			return nil
		}
		unlock()
		unlock = func() {}
		for {
			pause, changed := mustPause()
			if !pause {
				break
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		u, err := lockFile(ctx, p+".lock")
		if err != nil {
			return fmt.Errorf("disk cache %s: %w", key, err)
		}
		unlock = u
		if _, err := os.Stat(p); err == nil {
			return errFilledElsewhere
		}
		return nil
	}
	setSink(&sink{f: tmp, before: yield, mustPause: mustPause, wake: c.wake, prefetch: f.prio.p.Load() == Background, stats: &c.Stats})
	write := func() error {
		if err := fn(ctx, cw, reserve); err != nil {
			return err
		}
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("disk cache %s: %w", key, err)
		}
		return nil
	}
	err = write()
	if isNoSpace(err) {
		// The filesystem filled up under the budget (other files, other
		// processes): make room by evicting, and write again once.
		size := max(reserved, cw.written())
		setSink(&sink{f: tmp, before: yield, mustPause: mustPause, wake: c.wake, prefetch: f.prio.p.Load() == Background, stats: &c.Stats})
		if rerr := resetTemp(tmp); rerr != nil {
			return fmt.Errorf("disk cache %s: %w", key, rerr)
		}
		free, rerr := c.makeRoomOnDisk(size, key)
		if rerr != nil {
			return fmt.Errorf("disk cache %s: %w (making room after: %w)", key, rerr, err)
		}
		if reserved > 0 && free < reserved {
			return c.errNoSpace(key, reserved, free, err)
		}
		c.log.Warn("disk cache: the filesystem was full; evicted and retrying", "key", key,
			"bytes", bytesize.Format(size), "free", bytesize.Format(free))
		if err = write(); isNoSpace(err) {
			free, _ := freeBytes(c.dir)
			return c.errNoSpace(key, max(reserved, cw.written(), size), free, err)
		}
	}
	if errors.Is(err, errFilledElsewhere) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("disk cache %s: %w", key, err)
	}
	c.Stats.BytesWritten.Add(cw.written())
	if cw.written() > reserved {
		return c.evict(0, key)
	}
	return nil
}

// errFilledElsewhere stops a paused fill whose key another process filled
// in the meantime.
var errFilledElsewhere = errors.New("filled by another process")

// evict removes least recently used files until need more bytes fit in the
// budget. Files pinned by this process and the key being filled are kept.
func (c *Cache) evict(need int64, keep string) error {
	total, err := c.evictLRU(keep, func(total, _ int64) bool { return total+need > c.budget })
	if err != nil {
		return err
	}
	if total+need > c.budget {
		c.log.Warn("disk cache over budget: every remaining file is in use",
			"bytes", total+need, "budget", c.budget)
	}
	return nil
}

// evictLRU removes least recently used files, but not keep nor those
// pinned by this process, while more(total, removed) holds, total being the
// bytes of the cached files and removed the bytes removed so far. It
// returns the total left. It holds the directory-wide eviction lock.
func (c *Cache) evictLRU(keep string, more func(total, removed int64) bool) (int64, error) {
	unlock, err := lockFile(context.Background(), filepath.Join(c.dir, "evict.lock"))
	if err != nil {
		return 0, fmt.Errorf("disk cache: %w", err)
	}
	defer unlock()
	files, total, err := c.scan()
	if err != nil {
		return 0, err
	}
	if !more(total, 0) {
		return total, nil
	}
	slices.SortFunc(files, func(a, b cachedFile) int { return a.mtime.Compare(b.mtime) })
	c.mu.Lock()
	defer c.mu.Unlock()
	var removed int64
	for _, f := range files {
		if !more(total, removed) {
			break
		}
		if f.key == keep || c.pinned[f.key] > 0 {
			continue
		}
		if err := os.Remove(c.path(f.key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return total, fmt.Errorf("disk cache: evict %s: %w", f.key, err)
		}
		total -= f.size
		removed += f.size
		c.Stats.Evictions.Add(1)
		c.log.Debug("disk cache evicted", "key", f.key, "bytes", f.size)
	}
	return total, nil
}

type cachedFile struct {
	key   string
	size  int64
	mtime time.Time
}

// scan lists the complete files in the cache and their total size.
func (c *Cache) scan() ([]cachedFile, int64, error) {
	var files []cachedFile
	var total int64
	root := filepath.Join(c.dir, "files")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed by another process meanwhile
			}
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, ".lock") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		files = append(files, cachedFile{filepath.ToSlash(rel), info.Size(), info.ModTime()})
		total += info.Size()
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("disk cache: scan: %w", err)
	}
	return files, total, nil
}

// createTemp creates a temp file under tmp/ and takes an exclusive flock on
// it, which it holds until closed, so that cleanup by another process can
// tell a live writer from a dead one. Another process opening the cache may
// take the lock between the create and the flock and remove the file as
// stale; the file is then made again.
func (c *Cache) createTemp() (*os.File, error) {
	for range 3 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		name := filepath.Join(c.dir, "tmp", fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b[:])))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue // a cleanup holds it and is about to remove it
		}
		if held, err := f.Stat(); err == nil {
			if named, err := os.Stat(name); err == nil && os.SameFile(held, named) {
				return f, nil
			}
		}
		f.Close() // removed by a cleanup before we locked it
	}
	return nil, fmt.Errorf("temp file under %s: removed by another process's cleanup three times", filepath.Join(c.dir, "tmp"))
}

// removeStaleTemps deletes temp files whose writer is gone (no flock held).
func (c *Cache) removeStaleTemps() {
	dir := filepath.Join(c.dir, "tmp")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.Remove(p)
			c.log.Debug("disk cache removed stale temp file", "file", p)
		}
		f.Close()
	}
}

// lockFile takes an exclusive flock on path, waiting until it is free or ctx
// ends. The returned function releases it.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		return func() { f.Close() }, nil
	}
	// Held by someone else: wait in a goroutine so ctx can end the wait. If
	// the caller gives up, the goroutine releases the lock once it gets it.
	got := make(chan error) // unbuffered: a late result must meet abandoned
	abandoned := make(chan struct{})
	go func() {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		select {
		case got <- err:
		case <-abandoned:
			f.Close()
		}
	}()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		return func() { f.Close() }, nil
	case <-ctx.Done():
		close(abandoned)
		return nil, ctx.Err()
	}
}

func checkKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasSuffix(key, ".lock") ||
		slices.Contains(strings.Split(key, "/"), "..") {
		return fmt.Errorf("disk cache: invalid key %q", key)
	}
	return nil
}
