package diskcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"

	"github.com/oxefs/oxefs/storage"
)

// A ranged read (Backend.ReadAt, Backend.OpenAt) asks for bytes of one
// version of an object, and the cache decides where they come from, in
// this order:
//
//  1. the whole object, when it is cached and the read names no version
//     (a whole object opened by name, OpenFile, keeps no version; one
//     opened as an Object, OpenObject, is kept per version and read with
//     OpenCachedObject);
//  2. the bytes a whole-object download under way in this process has
//     already written, when it reads the same version;
//  3. a cached range holding them (KeepRange: the range itself; KeepBlocks:
//     the aligned blocks of BlockSize around them);
//  4. the source, with one request pinned to the version, read as a fill of
//     the reader's priority that yields to more urgent readers
//     (newPreemptible), and kept as in 3, or not at all (KeepNone); a
//     read with no Check (nor CallerChecks) is fetched as two copies at
//     once, kept or returned only when they agree (VerifyTwice, verify.go).
//
// A version that is gone is an error that says so (storage.ErrVersionGone,
// as the backend reports it), and the ranges cached of that version are
// dropped: they describe bytes that no longer exist. When the cache cannot
// keep the bytes (more than its whole budget, a full disk), they are read
// from the source instead; an error of the source itself, or of the
// read's Check, is returned as it is, never fetched twice.

// BlockSize is the size of the blocks KeepBlocks keeps, at offsets that
// are multiples of it.
const BlockSize = 1 << 20

// Object is one version of an object: what a ranged read is pinned to.
type Object struct {
	Name string
	// Size is the object's size at Version; KeepBlocks needs it for the
	// last block.
	Size int64
	// Version is storage.ObjectInfo.Version; "" reads whatever the source
	// holds.
	Version string
}

// Keep says what the cache keeps of the bytes a ranged read fetches.
type Keep int

const (
	// KeepRange keeps the range read as an entry of its own: for reads
	// that come again with the same offset and length (a record, an
	// episode's span of a video, a parser's reads).
	KeepRange Keep = iota
	// KeepBlocks keeps the aligned blocks (BlockSize) that hold the range:
	// for reads at scattered offsets of an object.
	KeepBlocks
	// KeepNone keeps nothing: for reads done once (an object's index).
	KeepNone
)

// ReadOptions shape a ranged read.
type ReadOptions struct {
	Keep Keep
	// Check, when not nil, returns a writer that sees the bytes fetched
	// from the source (KeepRange, KeepNone) as they arrive, then Close; an
	// error from either fails the read, and nothing is kept. Bytes served
	// from the cache are not checked again. A ReadAt with KeepBlocks
	// cannot be checked (its blocks are shared by reads of any range):
	// asking is an error.
	Check func() io.WriteCloser
	// CallerChecks says that the caller checks every byte it reads itself
	// (an RLDS record header, which its length CRC covers) and reads them
	// again when they fail: they are fetched once, as with a Check, not
	// compared with a second copy (VerifyTwice). Not with KeepBlocks.
	CallerChecks bool
	// Extent, for a ReadAt with KeepRange, is the range to keep when it is
	// more than the bytes read: the first read within it fetches and
	// keeps all of it (an episode's bytes of a video file), later ones
	// read it from disk; a Check sees all of it. Zero keeps the bytes
	// read. An Extent with another Keep is an error.
	Extent Extent
}

// Extent is a byte range of an object.
type Extent struct{ Off, Len int64 }

// contains reports whether [off, off+n) lies within e.
func (e Extent) contains(off, n int64) bool {
	return e.Len > 0 && off >= e.Off && off+n <= e.Off+e.Len
}

// fetchError is an error of the source or of a read's Check, as opposed
// to one of the cache: reading the source again would meet it again.
type fetchError struct{ err error }

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

// ReadAt reads len(p) bytes at off of o through the cache (see above);
// fewer is an error. It never reads beyond one version of the object.
func (b *Backend) ReadAt(ctx context.Context, o Object, p []byte, off int64, opts ReadOptions) (int, error) {
	if err := opts.valid(); err != nil {
		return 0, fmt.Errorf("%s: %w", o.Name, err)
	}
	opts = opts.callerChecked()
	if opts.Keep == KeepRange && opts.Extent.contains(off, int64(len(p))) {
		x := opts.Extent
		f, fallback, err := b.openAt(ctx, o, x.Off, x.Len, opts)
		if fallback {
			return b.readExtent(ctx, o, p, off, x, opts.Check)
		}
		if err != nil {
			return 0, err
		}
		defer f.Close()
		return readFull(f, p, off-x.Off)
	}
	if opts.Keep == KeepNone {
		return b.readNone(ctx, o, p, off, opts.Check)
	}
	if opts.Keep != KeepBlocks {
		f, err := b.OpenAt(ctx, o, off, int64(len(p)), opts)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		return readFull(f, p, 0)
	}
	n := 0
	for n < len(p) {
		at := off + int64(n)
		start := at / BlockSize * BlockSize
		size := min(BlockSize, o.Size-start)
		if size <= 0 {
			return n, fmt.Errorf("%s: read at %d of %d bytes: %w", o.Name, at, o.Size, io.ErrUnexpectedEOF)
		}
		f, err := b.OpenAt(ctx, o, start, size, ReadOptions{Keep: KeepRange})
		if err != nil {
			return n, err
		}
		m, err := readFull(f, p[n:min(int64(len(p)), start+size-off)], at-start)
		f.Close()
		n += m
		if err != nil {
			return n, fmt.Errorf("%s: block at %d: %w", o.Name, start, err)
		}
	}
	return n, nil
}

// valid rejects the combinations of options that a read cannot honour:
// blocks are kept whole and shared by reads of any range, so there is no
// one read's bytes for a Check to see.
func (opts ReadOptions) valid() error {
	if opts.Keep == KeepBlocks && opts.Check != nil {
		return errors.New("a read that keeps blocks cannot be checked")
	}
	if opts.Keep == KeepBlocks && opts.CallerChecks {
		return errors.New("a read that keeps blocks cannot be checked by its caller")
	}
	if opts.Keep != KeepRange && opts.Extent.Len > 0 {
		return errors.New("only a read that keeps its range can keep an extent")
	}
	return nil
}

// callerChecked returns opts with a Check that refuses nothing when the
// caller checks the bytes itself (CallerChecks) and gave none: such a
// read is fetched once, as a checked one.
func (opts ReadOptions) callerChecked() ReadOptions {
	if opts.CallerChecks && opts.Check == nil {
		opts.Check = summing
	}
	return opts
}

// readExtent reads p at off of o, within the extent x, from the source,
// outside the cache (which could not keep x). A check sees the whole
// extent, as it would have had the cache kept it; without one, only p is
// read.
func (b *Backend) readExtent(ctx context.Context, o Object, p []byte, off int64, x Extent, check func() io.WriteCloser) (int, error) {
	if check == nil {
		if err := b.fetchInto(ctx, o, p, off, nil, true); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	buf := make([]byte, x.Len)
	if err := b.fetchInto(ctx, o, buf, x.Off, check, true); err != nil {
		return 0, err
	}
	return copy(p, buf[off-x.Off:]), nil
}

// readNone reads p at off of o for KeepNone: from the whole object when it
// is cached and the read names no version, straight from the source into
// p otherwise.
func (b *Backend) readNone(ctx context.Context, o Object, p []byte, off int64, check func() io.WriteCloser) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("%s: read of %d bytes at %d", o.Name, len(p), off)
	}
	if o.Version == "" {
		if f := b.openWhole(o.Name, off, int64(len(p))); f != nil {
			defer f.Close()
			return readFull(f, p, 0)
		}
	}
	if err := b.fetchInto(ctx, o, p, off, check, false); err != nil {
		return 0, err
	}
	return len(p), nil
}

// readFull reads exactly p at off; the io.EOF an io.ReaderAt may give
// with a full read is no error.
func readFull(f io.ReaderAt, p []byte, off int64) (int, error) {
	n, err := f.ReadAt(p, off)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// OpenAt returns the n bytes at off of o, at offsets [0, n) of the file
// returned (see above for where they come from). KeepBlocks is read as
// KeepRange: a file holds one range.
func (b *Backend) OpenAt(ctx context.Context, o Object, off, n int64, opts ReadOptions) (storage.File, error) {
	if opts.Keep == KeepBlocks {
		opts.Keep = KeepRange
	}
	if err := opts.valid(); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Name, err)
	}
	opts = opts.callerChecked()
	f, fallback, err := b.openAt(ctx, o, off, n, opts)
	if !fallback {
		return f, err
	}
	buf := make([]byte, n)
	if err := b.fetchInto(ctx, o, buf, off, opts.Check, true); err != nil {
		return nil, err
	}
	return &memFile{bytes.NewReader(buf)}, nil
}

// openAt is OpenAt, but reports fallback, and no file, when the cache
// cannot keep the range: the caller reads what it needs from the source.
func (b *Backend) openAt(ctx context.Context, o Object, off, n int64, opts ReadOptions) (f storage.File, fallback bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if off < 0 || n < 0 {
		return nil, false, fmt.Errorf("%s: read of %d bytes at %d", o.Name, n, off)
	}
	if o.Version == "" {
		if f := b.openWhole(o.Name, off, n); f != nil {
			return f, false, nil
		}
	}
	if opts.Keep == KeepNone {
		buf := make([]byte, n)
		if err := b.fetchInto(ctx, o, buf, off, opts.Check, false); err != nil {
			return nil, false, err
		}
		return &memFile{bytes.NewReader(buf)}, false, nil
	}
	f, err = b.openRange(ctx, o.Name, o.Version, off, n, func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
		if err := b.Remembered(o.Name); err != nil {
			return err
		}
		if err := reserve(n); err != nil {
			return err
		}
		if buf, ok := b.copyFilling(ctx, o, off, n, opts.Check); ok {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			if opts.Check != nil || !b.comparesCopies() {
				return nil
			}
			// The download's bytes are not checked yet: they are one
			// copy, which a fetch must agree with.
			held := sumOf(buf)
			return b.fetchAgreed(ctx, o, w, off, n, true, &held)
		}
		return b.fetch(ctx, o, w, off, n, opts.Check, true)
	})
	if err == nil {
		return f, false, nil
	}
	if ctx.Err() != nil {
		return nil, false, err
	}
	err = b.versionGone(o, err)
	var fe *fetchError
	if errors.As(err, &fe) || errors.Is(err, storage.ErrVersionGone) || errors.Is(err, storage.ErrUnavailable) {
		return nil, false, err
	}
	// The cache could not keep the range (more than its whole budget, a
	// full disk): the caller reads from the source.
	b.cache.log.Debug("disk cache could not keep a range; reading from the source", "key", b.Key(o.Name),
		"offset", off, "bytes", n, "err", err)
	return nil, true, err
}

// openWhole returns the n bytes at off of the cached whole object, or nil
// when it is not cached or holds fewer bytes.
func (b *Backend) openWhole(name string, off, n int64) storage.File {
	key := b.Key(name)
	if checkKey(key) != nil {
		return nil
	}
	e, err := b.cache.openExisting(key)
	if err != nil {
		return nil
	}
	if off+n > e.Size() {
		e.Close()
		return nil
	}
	b.cache.Stats.Hits.Add(1)
	return &sectionFile{r: io.NewSectionReader(e, off, n), c: e}
}

// copyFilling reads the n bytes at off of o from the whole-object
// download under way in this process, when all of those bytes have
// arrived, they are of o's version, and check (if any) passes them; ok
// reports whether it did.
func (b *Backend) copyFilling(ctx context.Context, o Object, off, n int64, check func() io.WriteCloser) (p []byte, ok bool) {
	if o.Version == "" {
		return nil, false // of an unknown version
	}
	key := b.VersionKey(o) // a fill of that version, else of the name
	if !b.filledKey(key, off, n) {
		if key = b.Key(o.Name); !b.filledKey(key, off, n) {
			return nil, false // none under way, or not arrived yet
		}
	}
	p = make([]byte, n)
	if err := ctx.Err(); err != nil {
		return nil, false
	}
	ok, got, err := b.cache.ReadFilling(key, p, off)
	if err != nil || !ok || got != o.Version {
		return nil, false
	}
	if check != nil {
		c := check()
		_, werr := c.Write(p)
		if cerr := c.Close(); werr != nil || cerr != nil {
			return nil, false
		}
	}
	b.cache.Stats.RangesFromFill.Add(1)
	return p, true
}

// fetchInto reads p at off of o from the source, outside any fill; count
// counts it as a range fetched (see Stats).
func (b *Backend) fetchInto(ctx context.Context, o Object, p []byte, off int64, check func() io.WriteCloser, count bool) error {
	if err := b.Remembered(o.Name); err != nil {
		return err
	}
	w := &fixedWriter{p: p}
	err := b.fetch(ctx, o, w, off, int64(len(p)), check, count)
	return b.versionGone(o, err)
}

// fetch streams n bytes at off of o, of its version, from the source into
// w (a fill's writer, for pre-emption), through check when there is one;
// a short object is an error, so that the cache never publishes part of a
// range. Bytes that fail check are fetched again (see verify.go): the
// check's error is returned only when the source gives the same bytes
// twice in a row. Source and check errors come back as *fetchError; w's
// as they are. count counts it as a range fetched (see Stats).
func (b *Backend) fetch(ctx context.Context, o Object, w io.Writer, off, n int64, check func() io.WriteCloser, count bool) error {
	if check == nil && b.comparesCopies() {
		return b.fetchAgreed(ctx, o, w, off, n, count, nil)
	}
	r := b.cache.Retrial()
	for {
		f := b.fetchOnce(ctx, o, w, off, n, check, count)
		if !f.refused {
			return f.err
		}
		if ctx.Err() != nil {
			return ctx.Err() // no verdict on bytes cut short
		}
		v, err := r.Failed(ctx, Evidence{At: off, Len: f.seen, Sum: f.sum})
		switch v {
		case VerdictSource:
			return f.err
		case VerdictGaveUp:
			b.cache.Stats.Damaged.Add(1)
			b.cache.Stats.Rejected.Add(1)
			return &fetchError{storage.Transient(fmt.Errorf("%s: %d bytes at %d: each of %d fetches gave other bytes, each failing the check (last: %v): %w",
				storage.Object(b.inner, o.Name), n, off, r.Fetches(), f.err, storage.ErrChecksum))}
		}
		b.cache.Stats.Damaged.Add(1)
		if err != nil {
			return err
		}
		b.cache.log.Debug("disk cache: fetched bytes failed their check; fetched them again", "key", b.Key(o.Name),
			"offset", off, "bytes", n, "fetch", r.Fetches(), "err", f.err)
		if err := restartWriter(w); err != nil {
			return err
		}
	}
}

// fetched is the outcome of one fetch of a range.
type fetched struct {
	err error
	// refused: the check refused the bytes. seen and sum are the length
	// and CRC32C of the bytes the check saw, when it refused them or
	// the fetch succeeded.
	refused bool
	seen    int64
	sum     uint32
}

// restartWriter drops what a fetch wrote into w, so that it can fetch
// again.
func restartWriter(w io.Writer) error {
	switch w := w.(type) {
	case *fixedWriter:
		w.n = 0
		return nil
	case *sink:
		return w.restart()
	}
	return fmt.Errorf("disk cache: cannot fetch again into a %T", w)
}

// fetchOnce is one fetch of fetch's.
func (b *Backend) fetchOnce(ctx context.Context, o Object, w io.Writer, off, n int64, check func() io.WriteCloser, count bool) fetched {
	rc := newPreemptible(ctx, w, off, n, func(ctx context.Context, off, n int64) (io.ReadCloser, error) {
		return storage.OpenVersion(ctx, b.inner, o.Name, o.Version, off, n)
	})
	defer rc.Close()
	tw := &trackedWriter{w: w}
	var (
		c  io.WriteCloser
		cw *trackedWriter
		cd io.Writer // cw, or nil
	)
	if check != nil {
		c = check()
		cw = &trackedWriter{w: c, sum: true}
		cd = cw
	}
	var (
		got int64
		err error
	)
	if fw, ok := w.(*fixedWriter); ok {
		got, err = fw.readFrom(rc, cd) // straight into the caller's bytes
	} else {
		dst := io.Writer(tw)
		if cd != nil {
			dst = io.MultiWriter(cd, tw)
		}
		got, err = io.CopyBuffer(dst, rc, make([]byte, min(max(n, 1), 32<<10)))
	}
	if count {
		b.cache.Stats.RangeBytes.Add(got)
	}
	if tw.err != nil && errors.Is(err, tw.err) {
		if c != nil {
			c.Close()
		}
		return fetched{err: err} // the cache's, not the source's
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil // the object ended early: reported below
	}
	checked := cw != nil && cw.err != nil
	if c != nil {
		if cerr := c.Close(); err == nil && cerr != nil {
			err, checked = cerr, true
		}
	}
	if err == nil && got != n {
		err = fmt.Errorf("%s: %d bytes at %d, got %d: %w", o.Name, n, off, got, io.ErrUnexpectedEOF)
	}
	if count && (err == nil || checked) {
		b.cache.Stats.RangesFetched.Add(1) // all its bytes came, or the check refused them
	}
	b.Remember(o.Name, err)
	if err != nil {
		f := fetched{err: &fetchError{err}, refused: checked}
		if checked {
			f.seen, f.sum = cw.n, cw.crc
		}
		return f
	}
	if cw != nil {
		return fetched{seen: cw.n, sum: cw.crc}
	}
	return fetched{}
}

// versionGone drops the ranges cached of o's version when err says that
// version is gone (storage.ErrVersionGone, whose message says so), and
// returns err.
func (b *Backend) versionGone(o Object, err error) error {
	if !errors.Is(err, storage.ErrVersionGone) {
		return err
	}
	if ferr := b.ForgetRanges(o.Name, o.Version); ferr != nil && !errors.Is(ferr, fs.ErrNotExist) {
		b.cache.log.Warn("could not drop the stale cached ranges of a changed object", "key", b.Key(o.Name), "err", ferr)
	}
	return err
}

// sectionFile is part of an open cache entry.
type sectionFile struct {
	r *io.SectionReader
	c io.Closer
}

func (f *sectionFile) ReadAt(p []byte, off int64) (int, error) { return f.r.ReadAt(p, off) }
func (f *sectionFile) Size() int64                             { return f.r.Size() }
func (f *sectionFile) Close() error                            { return f.c.Close() }

// memFile is bytes read from the source and kept nowhere.
type memFile struct{ *bytes.Reader }

func (f *memFile) Close() error { return nil }

// trackedWriter remembers the error of the writer it wraps and, with
// sum, the length and CRC32C of the bytes offered to it.
type trackedWriter struct {
	w   io.Writer
	err error
	sum bool
	n   int64
	crc uint32
}

func (t *trackedWriter) Write(p []byte) (int, error) {
	if t.sum {
		t.n += int64(len(p))
		t.crc = crc32.Update(t.crc, storage.CastagnoliTable, p)
	}
	n, err := t.w.Write(p)
	if err != nil {
		t.err = err
	}
	return n, err
}

// fixedWriter writes into p, in order, and fails past its end.
type fixedWriter struct {
	p []byte
	n int
}

func (w *fixedWriter) Write(b []byte) (int, error) {
	if len(b) > len(w.p)-w.n {
		return 0, io.ErrShortWrite
	}
	w.n += copy(w.p[w.n:], b)
	return len(b), nil
}

// readFrom reads r into the rest of p until p is full or r ends, passing
// each part read to check when not nil; an error of check's ends it. It
// returns the bytes read, and no error when r ends (io.EOF).
func (w *fixedWriter) readFrom(r io.Reader, check io.Writer) (int64, error) {
	start := w.n
	for w.n < len(w.p) {
		m, err := r.Read(w.p[w.n:])
		if m > 0 && check != nil {
			if _, werr := check.Write(w.p[w.n : w.n+m]); werr != nil {
				return int64(w.n - start), werr
			}
		}
		w.n += m
		if err == io.EOF {
			break
		}
		if err != nil {
			return int64(w.n - start), err
		}
	}
	return int64(w.n - start), nil
}
