package lerobot

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format/lerobot/mp4"
)

// sample is one sample of a video track as it is kept: where its bytes
// lie, when it is shown and whether decoding can start there.
type sample struct {
	off  int64
	pts  int64
	size uint32
	key  bool
}

// sampleSize is the memory one kept sample costs, and sampleBytes one
// sample of a file's index: the sample and its place in the
// presentation-order index.
const (
	sampleSize  = int(unsafe.Sizeof(sample{}))
	sampleBytes = sampleSize + 4
)

// videoIndex is the parsed sample table of one video file: what an
// episode load needs to match its steps to frames. It is immutable once
// built. Episodes copy the part they use (see window), so dropping an index
// from the cache frees it.
type videoIndex struct {
	id        string // the source's location and path: File of its views
	path      string
	obj       *object
	codec     string
	config    []byte
	timescale float64
	samples   []sample
	byPTS     []int32 // sample numbers sorted by presentation time
	// cut, when the file ends before some samples' bytes (a faststart
	// file cut short), says so: an episode that needs such a sample is
	// bad data; the others are read as usual.
	cut error
}

// lost returns an error when a sample of samples lies past the end of the
// file, which then was cut short.
func (x *videoIndex) lost(samples []sample) error {
	if x.cut == nil {
		return nil
	}
	for _, s := range samples {
		if s.off+int64(s.size) > x.obj.size {
			return fmt.Errorf("%s is truncated: it ends at %d, the episode's samples run to %d: %w", x.path, x.obj.size, s.off+int64(s.size), x.cut)
		}
	}
	return nil
}

// bytes is the memory the index holds.
func (x *videoIndex) bytes() int64 {
	return int64(len(x.samples)*sampleBytes) + int64(len(x.config)+len(x.id)+len(x.path)) + 256
}

// parseAhead is what a read of the MP4 parser's fetches at least: the box
// headers it walks, and with LeRobot's faststart files the moov box of a
// file of some thousand frames, come in one request.
const parseAhead = 64 << 10

// parseIndex reads and parses the sample table of the video file at path.
// An error for bad bytes is corruptBytes; one for a read that failed is
// returned as it is.
func parseIndex(ctx context.Context, d *Dataset, path string) (*videoIndex, error) {
	var x *videoIndex
	err := d.checked(ctx, path, d.videoFile, func() (err error) {
		x, err = parseIndexOnce(ctx, d, path)
		return err
	})
	return x, err
}

// parseIndexOnce is one parse of parseIndex's.
func parseIndexOnce(ctx context.Context, d *Dataset, path string) (*videoIndex, error) {
	obj, err := d.videoFile(ctx, path)
	if err != nil {
		return nil, err
	}
	r := &boundReader{ctx: ctx, obj: obj, ahead: parseAhead, exact: d.src.Cached()}
	f, err := mp4.ParsePartial(r, obj.size)
	if ferr := r.failed(); ferr != nil {
		return nil, ferr
	}
	if errors.Is(err, mp4.ErrTruncated) {
		return nil, corrupt(fmt.Errorf("%s is truncated: %w", path, err))
	}
	if err != nil {
		return nil, corrupt(fmt.Errorf("%s: %w", path, err))
	}
	if len(f.Tracks) == 0 {
		return nil, corrupt(fmt.Errorf("%s has no video track", path))
	}
	t := &f.Tracks[0]
	if t.Codec == "" {
		return nil, corrupt(fmt.Errorf("%s: video codec %q is not supported (valid: av01 (AV1), avc1/avc3 (H.264), hvc1/hev1 (HEVC))", path, t.FourCC))
	}
	if len(t.Samples) == 0 || t.Timescale == 0 {
		return nil, corrupt(fmt.Errorf("%s: the video track has no frames", path))
	}
	x := &videoIndex{
		id: d.Source.Location() + "/" + path, path: path, obj: obj,
		codec: t.Codec, config: t.Config, timescale: float64(t.Timescale),
		samples: make([]sample, len(t.Samples)),
		byPTS:   make([]int32, len(t.Samples)),
	}
	x.cut = f.Truncated
	for i, s := range t.Samples {
		x.samples[i] = sample{off: s.Offset, pts: s.PTS, size: s.Size, key: s.Key}
		x.byPTS[i] = int32(i)
	}
	slices.SortStableFunc(x.byPTS, func(a, b int32) int {
		pa, pb := x.samples[a].pts, x.samples[b].pts
		switch {
		case pa < pb:
			return -1
		case pa > pb:
			return 1
		}
		return 0
	})
	return x, nil
}

// nearest returns the sample whose presentation time is nearest t
// seconds, and the distance in seconds.
func (x *videoIndex) nearest(t float64) (sample int, dist float64) {
	target := t * x.timescale
	i, _ := slices.BinarySearchFunc(x.byPTS, target, func(s int32, v float64) int {
		p := float64(x.samples[s].pts)
		switch {
		case p < v:
			return -1
		case p > v:
			return 1
		}
		return 0
	})
	best, bestD := -1, 0.0
	for _, k := range []int{i - 1, i} {
		if k < 0 || k >= len(x.byPTS) {
			continue
		}
		s := int(x.byPTS[k])
		dd := float64(x.samples[s].pts)/x.timescale - t
		if dd < 0 {
			dd = -dd
		}
		if best < 0 || dd < bestD {
			best, bestD = s, dd
		}
	}
	return best, bestD
}

// Sample describes sample j: an episode.Samples.
func (x *videoIndex) Sample(j int) (off int64, size int, pts int64, key bool) {
	s := x.samples[j]
	return s.off, int(s.size), s.pts, s.key
}

// window returns the first sample and a copy of the samples an episode
// whose steps are shown by the samples in shown needs: from the earliest
// sample any of them starts decoding from (episode.DecodeStart) up to (not
// including) the first keyframe after the last of them, or the end of the
// track. A decoder can show every step from these samples alone.
func (x *videoIndex) window(shown []int32) (first int, samples []sample) {
	lo, hi := int(shown[0]), int(slices.Max(shown))
	for _, j := range shown {
		lo = min(lo, int(j), max(episode.DecodeStart(x, int(j)), 0))
	}
	hi++
	for hi < len(x.samples) && !x.samples[hi].key {
		hi++
	}
	return lo, slices.Clone(x.samples[lo:hi])
}

// IndexCache keeps the parsed sample tables of video files, least recently
// used first out, within a bound in bytes. Parsing a file's table reads its
// moov box (for a remote file, one or a few ranged reads); keeping it saves
// doing so at every load of an episode in that file, and the bound keeps a
// dataset of millions of frames from holding its whole index in memory. A
// table larger than the whole bound is used by the load that parsed it and
// not kept. A file whose bytes are bad is remembered as such; a read that
// failed is retried at the next load. Several datasets may share one cache;
// it is safe for concurrent use.
type IndexCache struct {
	max int64

	mu    sync.Mutex
	used  int64
	lru   list.List // of *indexEntry, most recently used at the front
	files map[string]*indexEntry
	stats IndexStats
}

// IndexStats counts what an IndexCache did.
type IndexStats struct {
	// Bound is the cache's bound, Bytes and Files what it holds now.
	Bound, Bytes int64
	Files        int
	// Hits are loads that found their file's table kept; Parses are
	// tables read and parsed; Evicted are tables dropped for room.
	Hits, Parses, Evicted int64
}

type indexEntry struct {
	id    string
	ready chan struct{} // closed once x or err is set
	x     *videoIndex
	err   error
	bytes int64
	elem  *list.Element // nil once removed from the cache
}

// DefaultIndexBytes bounds the cache of a dataset opened without one.
const DefaultIndexBytes = 64 << 20

// NewIndexCache returns a cache holding at most max bytes of sample
// tables.
func NewIndexCache(max int64) *IndexCache {
	return &IndexCache{max: max, files: map[string]*indexEntry{}}
}

// Stats returns the cache's counters.
func (c *IndexCache) Stats() IndexStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Bound, s.Bytes, s.Files = c.max, c.used, len(c.files)
	return s
}

// lifetime begins shared work: the context it runs under, which outlives
// the reader that started it, and done, which ends it; ok is false when no
// shared work may begin (the store is closing).
type lifetime func(ctx context.Context) (shared context.Context, done func(), ok bool)

// get returns the table of the file id, parsing it with parse when it is
// not kept. Concurrent loads of one file share one parse, which runs under
// life's context: a reader that gives up (ctx) stops waiting, but the
// parse goes on for the others.
func (c *IndexCache) get(ctx context.Context, id string, life lifetime, parse func(context.Context) (*videoIndex, error)) (*videoIndex, error) {
	c.mu.Lock()
	e, ok := c.files[id]
	if ok {
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		c.stats.Hits++
		c.mu.Unlock()
		return e.wait(ctx)
	}
	shared, done, ok := life(ctx)
	if !ok {
		c.mu.Unlock()
		return nil, fmt.Errorf("index of %s: %w", id, context.Canceled)
	}
	e = &indexEntry{id: id, ready: make(chan struct{})}
	c.files[id] = e
	e.elem = c.lru.PushFront(e)
	c.stats.Parses++
	c.mu.Unlock()
	go func() {
		defer done()
		c.parse(shared, e, parse)
	}()
	return e.wait(ctx)
}

// wait waits for e's parse, or for ctx.
func (e *indexEntry) wait(ctx context.Context) (*videoIndex, error) {
	select {
	case <-e.ready:
		return e.x, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// parse fills e with parse's result, keeps or drops it, and closes its
// ready channel.
func (c *IndexCache) parse(ctx context.Context, e *indexEntry, parse func(context.Context) (*videoIndex, error)) {
	e.x, e.err = parse(ctx)
	c.mu.Lock()
	switch {
	case e.err != nil && !isCorrupt(e.err):
		c.remove(e) // a read failed: try again next time
	case e.err != nil:
		e.bytes = int64(len(e.err.Error())) + 64
	default:
		e.bytes = e.x.bytes()
	}
	if e.elem != nil {
		c.used += e.bytes
		for c.used > c.max && c.lru.Len() > 0 {
			c.remove(c.lru.Back().Value.(*indexEntry))
			c.stats.Evicted++
		}
	}
	c.mu.Unlock()
	close(e.ready)
}

// remove drops e from the cache; c.mu is held.
func (c *IndexCache) remove(e *indexEntry) {
	if e.elem == nil {
		return
	}
	c.lru.Remove(e.elem)
	e.elem = nil
	c.used -= e.bytes
	if c.files[e.id] == e {
		delete(c.files, e.id)
	}
}
