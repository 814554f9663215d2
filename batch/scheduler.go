// Package batch decides which batches are built when: one build per batch
// however many readers ask, readahead for sequential and strided readers,
// and a hard bound on the bytes of batches held. A batch a reader holds is
// never evicted: when the budget is full of held batches, readers wait for
// memory in the order they asked. It knows nothing of FUSE
// (the mount and the in-process benchmark drive the same Scheduler) and
// nothing of datasets (a BuildFunc fills a batch's frames).
//
// batch imports nothing else of oxefs: the composition root (package
// loader) gives each view's Scheduler its BuildFunc.
package batch

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"github.com/oxefs/oxefs/internal/npy"
	iofs "io/fs"
	"sync"
	"sync/atomic"
	"time"
)

// BuildFunc fills frames (exactly the batch's array bytes, zeroed or not)
// with batch n and returns its metadata file, or nil when there is none.
type BuildFunc func(ctx context.Context, n int64, frames []byte) (meta []byte, err error)

// Config describes what a Scheduler builds.
type Config struct {
	// Len is the number of batches listed.
	Len int64
	// Limit is one past the largest index Get serves; a Limit ≤ Len means
	// Len. The train view lists num_batches but serves its plan beyond.
	Limit int64
	// Shape is the shape of each batch's uint8 array.
	Shape []int
	// Meta says whether batches have metadata files.
	Meta  bool
	Build BuildFunc
	// Budget bounds the bytes of batch arrays held at once: being built,
	// built and waiting, being read. It must hold at least one batch; a
	// reader that holds batches while asking for more needs room for all
	// of them, or it waits for itself (until its context ends).
	Budget int64
	// Readahead is how many batches after each requested one are built
	// ahead while memory allows.
	Readahead int
	// Memfd puts each batch's whole .npy file (header, then array) in a
	// memfd, which Batch.BackingFd lends out for the kernel to serve reads
	// and mappings from (FUSE passthrough). A reader may map the file and
	// close it, and must keep seeing the batch it opened: a memfd lent out
	// is reused for another batch only once the kernel has closed every
	// description lent (see buffer), and counts in the budget until then.
	// Where a memfd cannot be made, the batch gets a heap buffer
	// (Stats.HeapFallbacks).
	Memfd bool
	// Headerless: the builder writes the whole file, and NPY returns the
	// buffer alone (Shape is then its length in bytes). A batch of several
	// files (step samples) is one such buffer, each file a window of it
	// with its own header.
	Headerless bool
	// Parts, with Memfd and Headerless, are the files of a batch of
	// several: each is then a memfd of its own, mapped at its place in the
	// one buffer the builder fills, which Batch.PartBackingFd lends out.
	// They must tile the buffer page by page (each starts on a page, where
	// the previous one's last page ends; the last one's ends the buffer),
	// or the batch gets a heap buffer (Stats.HeapFallbacks).
	Parts []Part
}

// Stats counts the scheduler's work. Fields are updated atomically.
type Stats struct {
	Requests      atomic.Int64 // Get calls
	Builds        atomic.Int64 // builds started
	BuildErrors   atomic.Int64
	ReadyHits     atomic.Int64 // a Get found its batch built
	InFlightHits  atomic.Int64 // a Get found its batch being built
	ReadaheadHits atomic.Int64 // a Get found a batch started by readahead
	Evictions     atomic.Int64
	MemoryWaits   atomic.Int64 // a demanded build queued for memory
	BuildNanos    atomic.Int64 // total build time
	HeapFallbacks atomic.Int64 // Config.Memfd: buffers that had to be heap memory
	Lent          atomic.Int64 // Config.Memfd: descriptions of memfds lent (Batch.BackingFd, PartBackingFd)
	LostReturns   atomic.Int64 // Config.Memfd: inotify queue overflows (lent memfds then never reused)
}

// ErrClosed is returned by Get after Close: the daemon is shutting down.
var ErrClosed = errors.New("batch scheduler closed: the daemon is shutting down")

// Scheduler builds batches on demand and ahead of demand.
//
// Memory: every batch buffer counts in held, which never exceeds the
// budget. A buffer is free (spare), idle (a built batch no one holds,
// evictable), or pinned (being built, or held by readers). A demanded batch
// that finds no free or idle buffer is queued; queued batches are admitted
// in order as buffers are unpinned, so a reader's open batch is never
// evicted under it and no reader starves. Readahead takes only memory no
// one waits for.
//
// Shutdown: Close marks the scheduler closed under mu, cancels builds, fails
// queued batches and waits for the builds running. Builds start only under
// mu while not closed, so none starts after Close (builds.Add never races
// builds.Wait), and Get after Close returns ErrClosed.
type Scheduler struct {
	// constants
	cfg    Config
	header []byte
	size   int64 // array bytes of one batch
	ctx    context.Context
	cancel context.CancelFunc
	builds sync.WaitGroup // builds running; Add only under mu while !closed

	noAhead atomic.Bool // set once by StopReadahead
	memfd   atomic.Bool // new buffers are memfds (Config.Memfd, SetMemfd)

	mu      sync.Mutex
	entries map[int64]*entry // guarded by mu: batches queued, being built or held
	idle    list.List        // guarded by mu: built, unpinned entries, least recently used first
	queue   list.List        // guarded by mu: entries waiting for memory, first come first
	held    int64            // guarded by mu: bytes of all buffers, in entries and spare
	spare   []*buffer        // guarded by mu: buffers of evicted batches, reused first
	closed  bool             // guarded by mu: Close was called
	// Config.Memfd: the memfd buffers, by inotify watch, and whether a
	// lost event means lent buffers can no longer be reused.
	returns *returns        // guarded by mu: created with the first memfd
	watched map[int]*buffer // guarded by mu
	lost    bool            // guarded by mu

	Stats Stats
}

// entry is one batch: queued for memory (queued set, buf nil), being
// built (buf set, done open), or built (done closed).
type entry struct {
	n         int64
	done      chan struct{} // closed when the build ends (or a queued entry fails)
	readahead bool          // started by readahead, not by a reader

	// set before done is closed; buf is set when memory is assigned,
	// under Scheduler.mu, and cleared on eviction
	buf  *buffer
	meta []byte
	err  error

	pins   int           // guarded by Scheduler.mu: readers holding or waiting for it, plus 1 while building
	served bool          // guarded by Scheduler.mu: a reader asked for it
	elem   *list.Element // guarded by Scheduler.mu: position in idle, when there
	queued *list.Element // guarded by Scheduler.mu: position in queue, when there
}

// NewScheduler checks cfg and returns a scheduler. Builds run under a
// context of their own until Close.
func NewScheduler(cfg Config) (*Scheduler, error) {
	size := int64(1)
	for _, d := range cfg.Shape {
		if d <= 0 {
			return nil, fmt.Errorf("batch shape %v has a non-positive dimension", cfg.Shape)
		}
		size *= int64(d)
	}
	if cfg.Budget < size {
		return nil, fmt.Errorf("memory budget of %d bytes cannot hold one batch of %d bytes (shape %v): raise --mem or lower batch_size / image_size",
			cfg.Budget, size, cfg.Shape)
	}
	if cfg.Build == nil || cfg.Len < 0 || cfg.Readahead < 0 {
		return nil, errors.New("batch: Config needs Build, Len ≥ 0 and Readahead ≥ 0")
	}
	if len(cfg.Parts) > 0 && !cfg.Headerless {
		return nil, errors.New("batch: Config.Parts needs Headerless (the builder writes every file whole)")
	}
	header := npy.Header("|u1", cfg.Shape)
	if cfg.Headerless {
		header = nil
	}
	s := &Scheduler{
		cfg:     cfg,
		header:  header,
		size:    size,
		entries: make(map[int64]*entry),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.memfd.Store(cfg.Memfd)
	return s, nil
}

// Close cancels builds in progress and waits for them to end; readers
// waiting for memory get ErrClosed. Batches held stay valid until released.
// It is safe to call more than once and concurrently with Get.
func (s *Scheduler) Close() {
	s.mu.Lock()
	s.closed = true
	s.cancel()
	for el := s.queue.Front(); el != nil; el = s.queue.Front() {
		e := s.queue.Remove(el).(*entry)
		e.queued = nil
		e.err = fmt.Errorf("batch %d: %w", e.n, ErrClosed)
		close(e.done)
		delete(s.entries, e.n)
	}
	// Idle batches go now; held ones when released (unpinLocked).
	for el := s.idle.Front(); el != nil; el = s.idle.Front() {
		s.removeLocked(el.Value.(*entry))
	}
	s.freeSpareLocked()
	for _, b := range s.watched {
		if b.cooling {
			s.dropLocked(b)
		}
	}
	s.returns.close()
	s.mu.Unlock()
	s.builds.Wait()
}

// SetMemfd says whether buffers made from now on are memfds (see
// Config.Memfd): a mount whose kernel refuses passthrough turns them off,
// so that its batches go back to reused heap buffers.
func (s *Scheduler) SetMemfd(on bool) { s.memfd.Store(on) }

// Len is the number of batches.
func (s *Scheduler) Len() int64 { return s.cfg.Len }

// Limit is one past the largest index Get serves (≥ Len).
func (s *Scheduler) Limit() int64 { return max(s.cfg.Limit, s.cfg.Len) }

// StopReadahead stops starting builds ahead of demand (shutdown: only
// readers already there are served).
func (s *Scheduler) StopReadahead() { s.noAhead.Store(true) }

// NPYSize is the size of each batch's .npy file.
func (s *Scheduler) NPYSize() int64 { return int64(len(s.header)) + s.size }

// HasMeta reports whether batches have metadata files.
func (s *Scheduler) HasMeta() bool { return s.cfg.Meta }

// Held returns the bytes of batch buffers held now.
func (s *Scheduler) Held() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// Waiting returns how many batches are queued for memory now.
func (s *Scheduler) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queue.Len()
}

// BatchBytes is the array bytes of one batch: what it takes of the budget.
func (s *Scheduler) BatchBytes() int64 { return s.size }

// Budget is the bound on the bytes of batches held.
func (s *Scheduler) Budget() int64 { return s.cfg.Budget }

// Batch is a built batch, pinned until Release.
type Batch struct {
	s    *Scheduler
	e    *entry
	once sync.Once
}

// NPY returns the .npy file's bytes: the header and the array, or the
// whole file where it is one memfd or the builder wrote it whole
// (Config.Headerless).
func (b *Batch) NPY() [][]byte {
	switch {
	case b.e.buf.npy != nil:
		return [][]byte{b.e.buf.npy}
	case b.s.header == nil:
		return [][]byte{b.e.buf.frames}
	}
	return [][]byte{b.s.header, b.e.buf.frames}
}

// Frames returns the array bytes.
func (b *Batch) Frames() []byte { return b.e.buf.frames }

// BackingFd lends the kernel the batch's memfd (Config.Memfd): a new
// read-only descriptor of it, which the caller closes once the kernel has
// taken its own reference (at the latest when the file served from it is
// released). It reports false for a batch on the heap.
func (b *Batch) BackingFd() (int, bool) {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	buf := b.e.buf
	if buf.npy == nil || len(buf.wds) == 0 {
		return -1, false
	}
	return b.lendLocked(0)
}

// PartBackingFd is BackingFd for file i of a batch of several
// (Config.Parts): a new read-only descriptor of that file's memfd. It
// reports false for a batch on the heap.
func (b *Batch) PartBackingFd(i int) (int, bool) {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	buf := b.e.buf
	if buf.npy != nil || len(buf.wds) == 0 || i < 0 || i >= len(buf.fds) {
		return -1, false
	}
	return b.lendLocked(i)
}

// lendLocked lends memfd i of the batch's buffer.
func (b *Batch) lendLocked(i int) (int, bool) {
	s, buf := b.s, b.e.buf
	fd, err := buf.lend(i)
	if err != nil {
		return -1, false
	}
	buf.lent++
	s.Stats.Lent.Add(1)
	return fd, true
}

// Meta returns the metadata file.
func (b *Batch) Meta() []byte { return b.e.meta }

// Release unpins the batch; it may then be evicted.
func (b *Batch) Release() {
	b.once.Do(func() {
		b.s.mu.Lock()
		b.s.unpinLocked(b.e)
		b.s.mu.Unlock()
	})
}

// lookKey marks a context whose Get is a look at one batch (see Look).
type lookKey struct{}

// Look marks ctx's Gets as looks at single batches, not a reader going
// through them (the web page's reads of the batch it shows): they start
// no readahead, which would build batches nobody reads.
func Look(ctx context.Context) context.Context { return context.WithValue(ctx, lookKey{}, true) }

// Get returns batch n, building it if no one has, and starts readahead
// after it (unless ctx is a Look). When the budget is full of batches readers hold, it waits for
// memory behind earlier requests. ctx bounds only this caller's wait: the
// build itself goes on for others (and for the cache) if this caller gives
// up, and a batch still waiting for memory leaves the queue when no one
// wants it any more. After Close it returns ErrClosed.
func (s *Scheduler) Get(ctx context.Context, n int64) (*Batch, error) {
	if n < 0 || n >= s.Limit() {
		return nil, fmt.Errorf("batch %d of %d: %w", n, s.Limit(), iofs.ErrNotExist)
	}
	s.Stats.Requests.Add(1)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("batch %d: %w", n, ErrClosed)
	}
	e := s.demandLocked(n)
	if ctx.Value(lookKey{}) == nil {
		s.readaheadLocked(n)
	}
	s.mu.Unlock()

	select {
	case <-e.done:
	case <-ctx.Done():
		s.mu.Lock()
		s.unpinLocked(e)
		s.mu.Unlock()
		return nil, ctx.Err()
	}
	if e.err != nil {
		s.mu.Lock()
		s.unpinLocked(e)
		s.mu.Unlock()
		return nil, e.err
	}
	return &Batch{s: s, e: e}, nil
}

// demandLocked returns batch n pinned for the caller: found, started, or
// queued for memory behind the batches queued before it (never ahead of
// them, even when memory frees up just now, so no reader starves). Its
// done channel closes once it is built.
func (s *Scheduler) demandLocked(n int64) *entry {
	if e := s.entries[n]; e != nil {
		select {
		case <-e.done:
			s.Stats.ReadyHits.Add(1)
		default:
			s.Stats.InFlightHits.Add(1)
		}
		if e.readahead && !e.served {
			s.Stats.ReadaheadHits.Add(1)
		}
		e.served = true
		s.pinLocked(e)
		return e
	}
	if s.queue.Len() == 0 {
		if buf := s.bufferLocked(false); buf != nil {
			e := s.startLocked(n, buf, false)
			e.served = true
			e.pins++ // the caller's
			return e
		}
	}
	s.Stats.MemoryWaits.Add(1)
	e := &entry{n: n, done: make(chan struct{}), served: true, pins: 1}
	s.entries[n] = e
	e.queued = s.queue.PushBack(e)
	return e
}

// admitLocked gives freed memory to queued batches, first come first, and
// starts their builds.
func (s *Scheduler) admitLocked() {
	for s.queue.Len() > 0 && !s.closed {
		buf := s.bufferLocked(false)
		if buf == nil {
			return
		}
		e := s.queue.Remove(s.queue.Front()).(*entry)
		e.queued = nil
		e.buf = buf
		e.pins++ // the build's
		s.buildLocked(e)
	}
}

// readaheadLocked starts builds of the batches after n while memory allows
// without evicting anything a reader may still want, and only while no
// reader waits for memory. It stays within the listing unless the reader
// is already past it.
func (s *Scheduler) readaheadLocked(n int64) {
	if s.noAhead.Load() {
		return
	}
	end := s.cfg.Len
	if n >= end {
		end = s.Limit()
	}
	for i := n + 1; i <= n+int64(s.cfg.Readahead) && i < end; i++ {
		if s.entries[i] != nil {
			continue
		}
		if s.queue.Len() > 0 {
			return // readers wait: they come first
		}
		buf := s.bufferLocked(true)
		if buf == nil {
			return // memory is short: readahead is the first thing to shrink
		}
		s.startLocked(i, buf, true)
	}
}

// bufferLocked finds the memory for one batch: a spare buffer, the buffer
// of an idle batch already read beyond the few kept (recycleLocked), a new
// one within the budget, or the buffer of an evicted idle batch. A readahead
// build may evict only batches already read (a batch built ahead but not yet
// read may be for a slower reader: DataLoader workers read strided); a
// demanded build may evict any idle batch, so stale readahead gives way to
// readers. It returns nil when none is free.
func (s *Scheduler) bufferLocked(readahead bool) *buffer {
	for {
		if k := len(s.spare); k > 0 {
			buf := s.spare[k-1]
			s.spare = s.spare[:k-1]
			return buf
		}
		if s.recycleLocked() {
			continue
		}
		if s.held+s.size <= s.cfg.Budget {
			s.held += s.size
			return s.newBuffer()
		}
		if !s.evictLocked(readahead) {
			return nil
		}
	}
}

// servedKept is how many idle batches already read stay built for a
// reader that reads one again (a file read twice, a DataLoader worker's
// retry) while the budget still has room for new buffers.
const servedKept = 8

// recycleLocked evicts the least recently used idle batch already read
// when more than servedKept of them are idle, so that a build reuses its
// buffer rather than new memory, and reports whether it did. A buffer
// written before costs nothing to write again, where new memory costs a
// page fault per 4 KiB page on the build's first write (6,400 for a
// 25 MB batch; 0.15 ms of CPU per sample of the 29-dataset mix at B=64
// here): batches read once are not kept to fill the budget. Batches built
// ahead and not yet read are never recycled (a slower reader's).
func (s *Scheduler) recycleLocked() bool {
	served := 0
	var oldest *entry
	for el := s.idle.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*entry); e.served {
			if oldest == nil {
				oldest = e
			}
			served++
		}
	}
	if served <= servedKept {
		return false
	}
	s.removeLocked(oldest)
	s.Stats.Evictions.Add(1)
	return true
}

// evictLocked drops the least recently used idle batch a build of this
// kind may evict (see bufferLocked), freeing its buffer, or reports false.
func (s *Scheduler) evictLocked(readahead bool) bool {
	for el := s.idle.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry)
		if readahead && !e.served {
			continue
		}
		s.removeLocked(e)
		s.Stats.Evictions.Add(1)
		return true
	}
	return false
}

// newBuffer makes the memory of one batch (see Config.Memfd).
func (s *Scheduler) newBuffer() *buffer {
	if s.memfd.Load() {
		if buf, err := s.newMemfdLocked(); err == nil {
			return buf
		}
		s.Stats.HeapFallbacks.Add(1)
	}
	return heapBuffer(s.size)
}

// newMemfdLocked makes a memfd buffer and watches it for descriptions
// closed, starting the watcher with the first one.
func (s *Scheduler) newMemfdLocked() (*buffer, error) {
	if s.returns == nil {
		r, err := newReturns()
		if err != nil {
			return nil, err
		}
		s.returns, s.watched = r, make(map[int]*buffer)
		go r.run(s.returned, s.lostReturns)
	}
	var (
		buf *buffer
		err error
	)
	if len(s.cfg.Parts) > 0 {
		buf, err = memfdParts(s.size, s.cfg.Parts)
	} else {
		buf, err = memfdBuffer(s.header, s.size)
	}
	if err != nil {
		return nil, err
	}
	if err := s.returns.watch(buf); err != nil {
		buf.free()
		return nil, err
	}
	for _, wd := range buf.wds {
		s.watched[wd] = buf
	}
	return buf, nil
}

// returned counts one description of a memfd closed for good (any of a
// buffer's memfds: lent counts them all); a buffer
// evicted with descriptions out becomes spare with the last one.
func (s *Scheduler) returned(wd int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.watched[wd]
	if b == nil {
		return
	}
	b.lent--
	if b.lent > 0 || !b.cooling {
		return
	}
	b.cooling = false
	if s.closed {
		s.dropLocked(b)
		return
	}
	s.spare = append(s.spare, b)
	s.admitLocked()
}

// lostReturns handles an inotify queue overflow: descriptions may have
// been closed without a word, so no buffer lent out is reused any more.
// Those evicted are freed now (their pages live on in readers that still
// map them, outside the budget); later ones when evicted.
func (s *Scheduler) lostReturns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Stats.LostReturns.Add(1)
	s.lost = true
	for _, b := range s.watched {
		if b.cooling {
			s.dropLocked(b)
		}
	}
	s.admitLocked()
}

// dropLocked frees a buffer and takes it out of the budget.
func (s *Scheduler) dropLocked(b *buffer) {
	if len(b.wds) > 0 {
		for _, wd := range b.wds {
			delete(s.watched, wd)
		}
		s.returns.unwatch(b)
	}
	b.cooling = false
	b.free()
	s.held -= s.size
}

// startLocked registers batch n and builds it in the background.
func (s *Scheduler) startLocked(n int64, buf *buffer, readahead bool) *entry {
	e := &entry{n: n, done: make(chan struct{}), readahead: readahead, buf: buf, pins: 1}
	s.entries[n] = e
	s.buildLocked(e)
	return e
}

// buildLocked builds e, which has its buffer and the build's pin, in the
// background. The caller has checked that s is not closed.
func (s *Scheduler) buildLocked(e *entry) {
	n := e.n
	s.Stats.Builds.Add(1)
	s.builds.Add(1)
	go func() {
		defer s.builds.Done()
		start := time.Now()
		meta, err := s.cfg.Build(s.ctx, n, e.buf.frames)
		s.Stats.BuildNanos.Add(int64(time.Since(start)))
		if err != nil {
			s.Stats.BuildErrors.Add(1)
			if s.ctx.Err() != nil {
				err = fmt.Errorf("batch %d: %w", n, ErrClosed) // cancelled by Close
			}
		}
		s.mu.Lock()
		e.meta, e.err = meta, err
		close(e.done)
		s.unpinLocked(e) // the build's pin
		s.mu.Unlock()
	}()
}

func (s *Scheduler) pinLocked(e *entry) {
	e.pins++
	if e.elem != nil {
		s.idle.Remove(e.elem)
		e.elem = nil
	}
}

// unpinLocked drops one pin. An unpinned built batch becomes idle
// (evictable) and queued batches may be admitted; a failed one is dropped
// so that a later request builds it again; a queued one that no one waits
// for any more leaves the queue.
func (s *Scheduler) unpinLocked(e *entry) {
	e.pins--
	if e.pins > 0 {
		return
	}
	switch {
	case e.queued != nil:
		s.queue.Remove(e.queued)
		e.queued = nil
		delete(s.entries, e.n)
		return
	case e.err != nil:
		if s.entries[e.n] == e {
			s.removeLocked(e)
		}
	case s.closed:
		if s.entries[e.n] == e {
			s.removeLocked(e)
		}
		return
	default:
		e.elem = s.idle.PushBack(e)
	}
	s.admitLocked()
}

// removeLocked forgets an unpinned entry. Its buffer is kept as spare, or,
// while descriptions of its memfd are lent out, cools until they are all
// closed (see Config.Memfd); once the scheduler is closed it is freed.
func (s *Scheduler) removeLocked(e *entry) {
	if e.elem != nil {
		s.idle.Remove(e.elem)
		e.elem = nil
	}
	delete(s.entries, e.n)
	b := e.buf
	e.buf = nil
	switch {
	case b == nil:
	case s.closed || (s.lost && b.lent > 0):
		s.dropLocked(b)
	case b.lent > 0:
		b.cooling = true
	default:
		s.spare = append(s.spare, b)
	}
}

// freeSpareLocked frees the spare buffers.
func (s *Scheduler) freeSpareLocked() {
	for _, b := range s.spare {
		s.dropLocked(b)
	}
	s.spare = nil
}

// Shape is the shape of a batch's frames array.
func (s *Scheduler) Shape() []int { return s.cfg.Shape }
