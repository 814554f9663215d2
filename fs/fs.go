// Package fs presents training batches as a read-only FUSE filesystem. It
// is an adapter only: what a batch holds, and when it is built, is decided
// behind the Batches interface; fs maps names to batch indices, serves
// bytes, and turns errors into errnos.
//
//	MOUNT/
//	  info.json, stats.json
//	  batches/000000.npy, batches/000000.json, ...
//	  val/batches/...        (when a validation view exists)
//
// A view whose batch is several files (Parted: step samples, an array per
// file) has no .npy per batch but one file per part, each a window of the
// batch's one buffer:
//
//	batches/000000.action.npy, batches/000000.action_is_pad.npy, ...,
//	batches/000000.json
//
// or, serving several data-parallel ranks from one daemon (Options.Ranks):
//
//	MOUNT/
//	  info.json, stats.json  (the daemon's)
//	  rank/R/info.json, rank/R/stats.json, rank/R/batches/..., rank/R/val/batches/...
//
// A directory lists batches 0 .. Len-1 but looks up any name below Limit:
// the train view goes on past its listing (later epochs, a resumed run),
// the validation view is one pass (Limit = Len).
//
// # Error handling
//
// Every error reaching the kernel passes through one function, errno: a
// read whose reader gave up (the request was interrupted) is EINTR,
// anything else EIO, logged once there with the operation and the batch.
// A name that is not a batch is ENOENT at lookup; a batch file that was
// looked up exists, so its open and reads never answer ENOENT, even when
// what failed was a missing file of the dataset. Writes are EROFS.
//
// # Kernel caching
//
// Names and sizes never change during a mount, so entries and attributes
// are cached for a long time. Listing, lookup and stat never build a batch,
// so `ls -l`, `du` or a file manager over a million batches costs nothing:
// a .npy file's size is known without building it, and a .json file stats
// as size 0, because its length is known only once its batch is built. A
// .json file is opened with direct I/O, so reads ignore that size and
// return the whole content until EOF (json.load(open(path)), cat and
// os.ReadFile all read it whole). A part file's size is its Part's. By
// default .npy files, parts included, go through the kernel's page cache,
// which mmap needs (numpy.load with mmap_mode="r"): go-fuse 2.12 does not
// negotiate FUSE's DIRECT_IO_ALLOW_MMAP, so a direct-I/O file cannot be
// mapped. With MountOptions.DirectIO they are opened with direct I/O
// instead: each read passes straight through, up to MaxWrite (1 MiB) per
// request, faster for large reads but not mappable. The page cache holds clean, reclaimable
// copies of batches read; the daemon's own memory budget is unaffected.
// .json, info.json and stats.json always use direct I/O (a .json stats as
// 0 bytes, and stats.json changes). On a passthrough mount, a .npy file
// whose Batch is a BackingFder, and a part file whose Batch is a
// PartBackingFder, are served by the kernel from the memfd lent: the
// kernel serves a backing file from its offset 0 to its end, so each part
// lent is a memfd of its own, exactly the part's size. Any other batch
// file on such a mount goes through the page cache.
//
// The kernel keeps an inode, and so this process a node, for every entry
// it has looked up until it forgets it, which it does only under its own
// memory pressure: batch file nodes are bounded (Options.MaxNodes). Past
// the bound, listings carry names without attributes, and lookups have
// the kernel forget the oldest entries (see nodeBound).
//
// # Mountpoints and shutdown
//
// Mount refuses a directory that is a live oxefs mount already (stacking
// would hide the first daemon's batches from its readers; the error names
// that daemon's pid, read from the "pid" field of its info.json) and,
// unless MountOptions.NonEmpty, a directory that holds files. A dead mount
// left by a crashed daemon (ENOTCONN) is lazily unmounted first, and that
// is logged. Server.Detach unmounts lazily: no new open arrives, files
// already open or mapped are served until they are closed, then Wait
// returns; Server.Abort ends the connection (files served by passthrough
// still read from their memfd; see Server.Abort).
//
// # Open files pin their batch
//
// Opening a batch file gets its batch (waiting while it is built) and pins
// it in the file handle until the last close: every read of an open file is
// served from memory, and the batch cannot be evicted between two reads
// (under memory pressure that would rebuild half-read batches forever). An
// mmap keeps the file open until it is unmapped. So the batch budget must
// hold a batch per file open at once, plus one: when it is full of open
// batches, further opens wait for memory, first come first served, until a
// reader closes a file (see batch.Scheduler).
//
// # The daemon's own reads are looks
//
// A batch opened or read by a thread of the daemon's own process (the web
// page of mount --view, which reads the mount as any trainer does) is a
// look at that batch, not a reader going through them: its Get's context
// says so (Looking), and the batches start no readahead for it.
//
// # Interrupts
//
// Open waits for its batch under the request's context: if the reader is
// killed, the kernel interrupts the request, the open returns EINTR, and the
// build goes on for other readers (shared work runs under the daemon's
// context, not the reader's); a reader still waiting for memory leaves the
// queue. When the daemon shuts down, batches no one has yet are not built:
// opens and reads get EIO.
//
// fs imports nothing else of oxefs: the composition root hands it the
// batches and the documents to serve.
package fs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Batches is one directory of batch files.
type Batches interface {
	// Len is the number of batches listed: 0 .. Len()-1.
	Len() int64
	// Limit is one past the largest batch looked up by name (≥ Len).
	Limit() int64
	// NPYSize is the size in bytes of every .npy file.
	NPYSize() int64
	// HasMeta reports whether .json metadata files exist.
	HasMeta() bool
	// Get returns batch n, waiting under ctx while it is built. The batch
	// stays valid until Release. A Get whose ctx is Looking should start
	// no readahead.
	Get(ctx context.Context, n int64) (Batch, error)
}

// Parted is Batches whose batch is several files, as step samples are (an
// array per file) and augmented pairs (".npy" and ".augment.npy"): file i
// of batch n is named batchName(n)+Parts()[i].Suffix and holds bytes [Off,
// Off+Size) of the concatenation of the batch's NPY slices. Such batches
// have a plain .npy file only as one of their parts; a part is served by
// passthrough where its Batch is a PartBackingFder.
type Parted interface {
	Parts() []Part
}

// Part is one file of a Parted batch.
type Part struct {
	Suffix    string // ".action.npy"
	Off, Size int64
}

// BackingFder is a Batch whose whole .npy file is in a memfd, which the
// kernel can serve reads and mappings from directly (FUSE passthrough).
// BackingFd returns a new descriptor at each call, which fs closes when
// the file handle it was asked for is released: the kernel holds a
// reference of its own for as long as it serves the file or a reader maps
// it, and its owner learns from that last close when the memory is free
// again.
type BackingFder interface {
	BackingFd() (int, bool)
}

// PartBackingFder is a Batch of a Parted view whose part i (in Parts()
// order) is a memfd of its own, exactly the part's Size bytes, which the
// kernel can serve from its offset 0. PartBackingFd lends a new
// descriptor of it at each call, as BackingFd does.
type PartBackingFder interface {
	PartBackingFd(i int) (int, bool)
}

// Batch is a built batch, pinned in memory until Release.
type Batch interface {
	// NPY returns the .npy file's bytes as consecutive slices (e.g. the
	// header, then the frames); their lengths add up to NPYSize.
	NPY() [][]byte
	// Meta returns the .json file's bytes.
	Meta() []byte
	Release()
}

// Options says what the mount serves.
type Options struct {
	// Train is the top directory's batches/; unused (and may be nil) with
	// Ranks.
	Train Batches
	// Val is the validation view, or nil.
	Val Batches
	// Info returns info.json (a JSON object whose "pid", when present,
	// names the daemon to a second mount refused on the same directory);
	// Stats returns stats.json at the moment of the read.
	Info  func() []byte
	Stats func() []byte
	// Ranks, when set, are served each under rank/R/ with views and
	// documents of its own, and the top directory holds only Info, Stats
	// and rank/.
	Ranks []Rank
	// Recorder, when set, observes every batch file read: the bytes served
	// and how long the read waited for its batch. A file served by
	// passthrough is observed once, at open, with 0 bytes: its reads never
	// reach this process.
	Recorder func(n int64, val bool, bytes int, wait time.Duration)
	// MaxNodes bounds the batch file nodes held for the kernel's inodes
	// (NodeBytes each; see nodeBound); 0 means DefaultMaxNodes.
	MaxNodes int
	Log      *slog.Logger
}

// Rank is one directory rank/R/ of a mount serving several ranks.
type Rank struct {
	Rank       int
	Train, Val Batches // Val may be nil
	// Info and Stats return the rank's info.json and stats.json.
	Info, Stats func() []byte
}

// errno is the one place where errors become errnos.
func errno(log *slog.Logger, err error, op string, n int64) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return syscall.EINTR
	}
	log.Error("read failed", "op", op, "batch", n, "err", err)
	return syscall.EIO
}

// started is when the package was loaded: the time every file reports
// (batches are made on demand, but the set of them is fixed at mount).
var started = time.Now()

// fileTimes gives a file one link and the mount's start as its times, so
// that `ls -l` shows neither 0 links nor 1970.
func fileTimes(a *fuse.Attr) {
	a.Nlink = 1
	a.SetTimes(&started, &started, &started)
}

// ErrShuttingDown fails the opens that were still waiting for their batch
// when the daemon began to shut down (Server.StopOpens). It is EIO, not
// EINTR, so that a reader does not retry into the detached mountpoint.
var ErrShuttingDown = errors.New("the daemon is shutting down")

// batchName formats a batch index: zero-padded to at least 6 digits.
func batchName(n int64) string {
	s := strconv.FormatInt(n, 10)
	if len(s) < 6 {
		s = strings.Repeat("0", 6-len(s)) + s
	}
	return s
}

// parseBatchName returns the index and extension of a batch file name, or
// ok=false. A name must be what batchName writes: 000042.npy, not 42.npy.
func parseBatchName(name string) (n int64, ext string, ok bool) {
	n, suffix, ok := splitBatchName(name)
	if !ok || (suffix != ".npy" && suffix != ".json") {
		return 0, "", false
	}
	return n, suffix[1:], true
}

// splitBatchName splits a batch file name into the index and the rest from
// its first dot (".npy", ".action.npy"), or reports ok=false. The index
// must be as batchName writes it.
func splitBatchName(name string) (n int64, suffix string, ok bool) {
	i := strings.IndexByte(name, '.')
	if i < 0 || i+1 == len(name) {
		return 0, "", false
	}
	base, suffix := name[:i], name[i:]
	if len(base) < 6 {
		return 0, "", false
	}
	if len(base) > 6 && base[0] == '0' {
		return 0, "", false
	}
	for _, c := range base {
		if c < '0' || c > '9' {
			return 0, "", false
		}
	}
	n, err := strconv.ParseInt(base, 10, 64)
	if err != nil {
		return 0, "", false
	}
	return n, suffix, true
}

// checkParts refuses a Parted view whose parts could not be served: names
// that are not file names, or clash with each other or with the .json, and
// windows outside the batch.
func checkParts(b Batches) error {
	p, ok := b.(Parted)
	if !ok {
		return nil
	}
	parts := p.Parts()
	if len(parts) == 0 {
		return errors.New("fs: a Parted view has no parts")
	}
	seen := map[string]bool{}
	for _, pt := range parts {
		switch {
		case len(pt.Suffix) < 2 || pt.Suffix[0] != '.' || strings.ContainsAny(pt.Suffix, "/\x00"):
			return fmt.Errorf(`fs: part suffix %q: want a dot and then a file name's characters, as ".action.npy"`, pt.Suffix)
		case pt.Suffix == ".json":
			return errors.New(`fs: part suffix ".json" is the batch's metadata file`)
		case seen[pt.Suffix]:
			return fmt.Errorf("fs: part suffix %q given twice", pt.Suffix)
		case pt.Off < 0 || pt.Size < 0 || pt.Off+pt.Size > b.NPYSize():
			return fmt.Errorf("fs: part %q is bytes [%d, %d) of a batch of %d bytes", pt.Suffix, pt.Off, pt.Off+pt.Size, b.NPYSize())
		}
		seen[pt.Suffix] = true
	}
	return nil
}

// root is the mount's top directory.
type root struct {
	gofs.Inode
	opts     Options
	directIO bool
	serve    *serving
	// opens is cancelled when the mount stops taking opens (Server.StopOpens):
	// opens still waiting for their batch then fail.
	opens context.Context
	nodes *nodeBound
}

var _ = (gofs.NodeOnAdder)((*root)(nil))

func (r *root) OnAdd(ctx context.Context) {
	add := func(parent *gofs.Inode, name string, node gofs.InodeEmbedder, mode uint32) *gofs.Inode {
		child := parent.NewPersistentInode(ctx, node, gofs.StableAttr{Mode: mode})
		parent.AddChild(name, child, false)
		return child
	}
	// views adds info.json, stats.json, batches/ and val/batches/ to dir;
	// slot numbers the views apart in inode numbers (batchIno).
	views := func(dir *gofs.Inode, train, val Batches, info, stats func() []byte, slot uint64) {
		add(dir, "info.json", &dynamicFile{content: info}, syscall.S_IFREG)
		add(dir, "stats.json", &dynamicFile{content: stats}, syscall.S_IFREG)
		if train != nil {
			add(dir, "batches", r.batchDir(train, false, 2*slot), syscall.S_IFDIR)
		}
		if val != nil {
			v := add(dir, "val", &gofs.Inode{}, syscall.S_IFDIR)
			add(v, "batches", r.batchDir(val, true, 2*slot+1), syscall.S_IFDIR)
		}
	}
	if len(r.opts.Ranks) == 0 {
		views(&r.Inode, r.opts.Train, r.opts.Val, r.opts.Info, r.opts.Stats, 0)
		return
	}
	views(&r.Inode, nil, nil, r.opts.Info, r.opts.Stats, 0)
	ranks := add(&r.Inode, "rank", &gofs.Inode{}, syscall.S_IFDIR)
	for i, rk := range r.opts.Ranks {
		dir := add(ranks, strconv.Itoa(rk.Rank), &gofs.Inode{}, syscall.S_IFDIR)
		views(dir, rk.Train, rk.Val, rk.Info, rk.Stats, uint64(i))
	}
}

// batchDir makes the directory of view b, numbered view among the mount's
// batch directories.
func (r *root) batchDir(b Batches, val bool, view uint64) *batchDir {
	d := &batchDir{b: b, opts: &r.opts, val: val, view: view, directIO: r.directIO, serve: r.serve, opens: r.opens, nodes: r.nodes}
	if p, ok := b.(Parted); ok {
		d.parts = p.Parts()
		d.partOf = make(map[string]int, len(d.parts))
		for i, pt := range d.parts {
			d.partOf[pt.Suffix] = i
		}
	}
	return d
}

// dynamicFile is a small file whose content is computed when it is opened
// (info.json, stats.json). Its size is that of the content at stat time.
type dynamicFile struct {
	gofs.Inode
	content func() []byte
}

var (
	_ = (gofs.NodeGetattrer)((*dynamicFile)(nil))
	_ = (gofs.NodeOpener)((*dynamicFile)(nil))
	_ = (gofs.FileReader)((*snapshot)(nil))
)

func (f *dynamicFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if s, ok := fh.(*snapshot); ok {
		out.Size = uint64(len(s.data))
	} else {
		out.Size = uint64(len(f.content()))
	}
	out.Mode = 0o444
	fileTimes(&out.Attr)
	return 0
}

// Open snapshots the content, so one open file reads consistent bytes.
// Direct I/O: the size changes between snapshots.
func (f *dynamicFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	return &snapshot{data: f.content()}, fuse.FOPEN_DIRECT_IO, 0
}

type snapshot struct{ data []byte }

func (s *snapshot) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(s.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(s.data[off:min(off+int64(len(dest)), int64(len(s.data)))]), 0
}

// batchDir lists and looks up batch files by name. Children are created on
// lookup and forgotten by the kernel as it likes; nothing per batch is kept
// here.
type batchDir struct {
	gofs.Inode
	b        Batches
	opts     *Options
	val      bool
	view     uint64 // numbers the directory apart in inode numbers
	directIO bool
	serve    *serving
	opens    context.Context // see root.opens
	nodes    *nodeBound      // the mount's, shared by its batch directories
	// A Parted view's parts (nil otherwise), and each one's index by
	// suffix. Parts never change during a mount.
	parts  []Part
	partOf map[string]int
}

var _ = (gofs.NodeLookuper)((*batchDir)(nil))

// resolve parses a batch file's name: its index, and whether it is the
// .json, or which part (-1: the .npy of a view that is not Parted).
func (d *batchDir) resolve(name string) (n int64, meta bool, part int, ok bool) {
	n, suffix, ok := splitBatchName(name)
	if !ok || n >= d.b.Limit() {
		return 0, false, 0, false
	}
	if suffix == ".json" {
		return n, true, -1, d.b.HasMeta()
	}
	if d.parts == nil {
		return n, false, -1, suffix == ".npy"
	}
	part, ok = d.partOf[suffix]
	return n, false, part, ok
}

func (d *batchDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	n, meta, part, ok := d.resolve(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	out.Attr.Mode = syscall.S_IFREG | 0o444
	fileTimes(&out.Attr)
	// A name the kernel still holds (listed again with READDIRPLUS) keeps
	// its node: a new one would lose to it in go-fuse and count for
	// nothing against the node bound.
	if ch := d.GetChild(name); ch != nil {
		if f, ok := ch.Operations().(*batchFile); ok {
			out.Attr.Size = uint64(f.size())
			return ch, 0
		}
	}
	f := &batchFile{dir: d, n: n, meta: meta, part: part}
	out.Attr.Size = uint64(f.size())
	ch := d.NewInode(ctx, f, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: d.fileIno(n, meta, part)})
	d.nodes.add(f)
	return ch, 0
}

// batchIno is a batch file's inode number, the same at every lookup: a
// listing repeated after the kernel forgot an entry (or READDIRPLUS, which
// looks every entry up again) finds the inode the kernel already has and
// its cached attributes, instead of a new inode that invalidates them. The
// numbers sit in [2⁶¹, 2⁶²), apart from go-fuse's automatic ones (from
// 2⁶³): bit 0 tells .json from .npy, bits 1..48 hold the index and bits
// 49..60 the view (the directory's number among the mount's batch
// directories). An index or view too large for the range (possible only
// past 2⁴⁸ batches or 2¹² directories) gets an automatic number.
func batchIno(view uint64, n int64, meta bool) uint64 {
	if n < 0 || n >= 1<<48 || view >= 1<<12 {
		return 0
	}
	ino := uint64(1)<<61 | view<<49 | uint64(n)<<1
	if meta {
		ino |= 1
	}
	return ino
}

// partIno is batchIno for the files of a Parted view: its numbers sit in
// [2⁶², 2⁶³), apart from batchIno's. Bits 0..7 hold 0 for the .json and
// i+1 for part i, bits 8..49 the index and bits 50..61 the view. A part
// past the 255th, an index past 2⁴² or a view past 2¹² gets an automatic
// number.
func partIno(view uint64, n int64, meta bool, part int) uint64 {
	k := uint64(part + 1)
	if meta {
		k = 0
	}
	if n < 0 || n >= 1<<42 || view >= 1<<12 || k >= 1<<8 {
		return 0
	}
	return uint64(1)<<62 | view<<50 | uint64(n)<<8 | k
}

// batchFile is one .npy or .json file, or one part of a Parted batch.
type batchFile struct {
	gofs.Inode
	dir  *batchDir
	n    int64
	meta bool
	part int // index in dir.parts of a part file; -1 for a .npy or .json

	// the node bound's list (see nodeBound)
	prev, next *batchFile // guarded by dir.nodes.mu
	listed     bool       // guarded by dir.nodes.mu
}

// name is the file's name in its directory.
func (f *batchFile) name() string { return f.dir.fileName(f.n, f.meta, f.part) }

// fileName names batch n's .json (meta), part (≥ 0) or .npy.
func (d *batchDir) fileName(n int64, meta bool, part int) string {
	switch {
	case meta:
		return batchName(n) + ".json"
	case part >= 0:
		return batchName(n) + d.parts[part].Suffix
	}
	return batchName(n) + ".npy"
}

// fileIno is the inode number of batch n's .json (meta), part (≥ 0) or
// .npy: batchIno, or partIno in a Parted view.
func (d *batchDir) fileIno(n int64, meta bool, part int) uint64 {
	if d.parts != nil {
		return partIno(d.view, n, meta, part)
	}
	return batchIno(d.view, n, meta)
}

// OnForget uncounts the node once the kernel has forgotten it.
func (f *batchFile) OnForget() { f.dir.nodes.forgot(f) }

var (
	_ = (gofs.NodeGetattrer)((*batchFile)(nil))
	_ = (gofs.NodeOpener)((*batchFile)(nil))
	_ = (gofs.NodeReader)((*batchFile)(nil))
	_ = (gofs.NodeOnForgetter)((*batchFile)(nil))
	_ = (gofs.FileReader)((*openBatch)(nil))
	_ = (gofs.FileReleaser)((*openBatch)(nil))
	_ = (gofs.FilePassthroughFder)((*openBatch)(nil))
)

// size is the file's stat size, known without building anything: a .npy
// file's or a part's true size, and 0 for a .json file, whose length is
// known only once its batch is built (it is read with direct I/O, which
// ignores the size). Since stat costs nothing, listings use READDIRPLUS:
// one request carries many entries with their attributes, so `ls -l` of a
// large directory makes no LOOKUP per entry (up to the node bound, see
// nodeBound).
func (f *batchFile) size() int64 {
	switch {
	case f.meta:
		return 0
	case f.part >= 0:
		return f.dir.parts[f.part].Size
	}
	return f.dir.b.NPYSize()
}

func (f *batchFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = 0o444
	out.Size = uint64(f.size())
	fileTimes(&out.Attr)
	return 0
}

// Open gets the batch (waiting while it is built, or while memory is
// full of batches other readers hold) and pins it in the file handle until
// the file is released: a batch is never evicted while a reader has it open.
func (f *batchFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	start := time.Now()
	if opens := f.dir.opens; opens != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(opens, cancel)()
	}
	b, err := f.dir.b.Get(markLook(ctx), f.n)
	if err != nil {
		if f.dir.opens != nil && f.dir.opens.Err() != nil {
			err = fmt.Errorf("open of batch %d: %w", f.n, ErrShuttingDown)
		}
		return nil, 0, errno(f.dir.opts.Log, err, "open", f.n)
	}
	h := &openBatch{file: f, b: b, refs: 1, wait: time.Since(start)}
	if f.meta || f.dir.directIO {
		return h, fuse.FOPEN_DIRECT_IO, 0
	}
	return h, fuse.FOPEN_KEEP_CACHE, 0 // batches never change
}

// openBatch is an open batch file's handle: it pins the batch from Open
// until Release. Each read in flight holds a reference too, so the batch is
// released only once no reply still points into it.
type openBatch struct {
	// constants
	file *batchFile
	b    Batch
	wait time.Duration // how long Open waited for the batch

	mu      sync.Mutex
	refs    int  // guarded by mu: 1 until Release, plus reads in flight
	waited  bool // guarded by mu: the first read has reported wait
	lent    int  // guarded by mu: the descriptor BackingFd gave, closed at Release
	hasLent bool // guarded by mu: lent is set
}

// acquire takes a reference for a read, or reports false after Release.
// The first read reports Open's wait as its own.
func (h *openBatch) acquire() (wait time.Duration, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refs == 0 {
		return 0, false
	}
	h.refs++
	if !h.waited {
		h.waited = true
		wait = h.wait
	}
	return wait, true
}

// unref drops a reference; the last one unpins the batch.
func (h *openBatch) unref() {
	h.mu.Lock()
	h.refs--
	last := h.refs == 0
	h.mu.Unlock()
	if last {
		h.b.Release()
	}
}

func (h *openBatch) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return h.file.read(ctx, h, dest, off)
}

// PassthroughFd hands the kernel the batch's memfd as the file's backing
// file, when the mount serves by passthrough (see serving): reads and
// mappings of the .npy file then go from the memfd to the reader without
// this process. A part file gets its part's own memfd (PartBackingFder).
// go-fuse asks once per inode while it has no backing file registered;
// every open of the inode is of the same pinned batch.
func (h *openBatch) PassthroughFd() (int, bool) {
	if h.file.meta || h.file.dir.serve == nil || !h.file.dir.serve.passthrough.Load() {
		return 0, false
	}
	fd, ok := h.backingFd()
	if !ok {
		return 0, false
	}
	h.mu.Lock()
	h.lent, h.hasLent = fd, true
	h.mu.Unlock()
	// No read will reach this process: the open's wait is the reader's.
	if wait, ok := h.acquire(); ok {
		if rec := h.file.dir.opts.Recorder; rec != nil {
			rec(h.file.n, h.file.dir.val, 0, wait)
		}
		h.unref()
	}
	return fd, true
}

// backingFd asks the batch for the memfd of the file: the whole .npy's,
// or the part's.
func (h *openBatch) backingFd() (int, bool) {
	if h.file.part >= 0 {
		if bf, ok := h.b.(PartBackingFder); ok {
			return bf.PartBackingFd(h.file.part)
		}
		return 0, false
	}
	if bf, ok := h.b.(BackingFder); ok {
		return bf.BackingFd()
	}
	return 0, false
}

// Release closes the descriptor lent to the kernel (which keeps its own
// reference while it needs one) and unpins the batch (once reads in
// flight are done with it).
func (h *openBatch) Release(ctx context.Context) syscall.Errno {
	h.mu.Lock()
	fd, hasLent := h.lent, h.hasLent
	h.hasLent = false
	h.mu.Unlock()
	if hasLent {
		syscall.Close(fd)
	}
	h.unref()
	return 0
}

func (f *batchFile) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h, _ := fh.(*openBatch)
	return f.read(ctx, h, dest, off)
}

// read serves a read from the open handle's pinned batch, or, without one
// (a read after the handle's release, which the kernel does not send), by
// getting the batch for this read alone.
func (f *batchFile) read(ctx context.Context, h *openBatch, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	var (
		b       Batch
		release func()
		wait    time.Duration
		ok      bool
	)
	if h != nil {
		wait, ok = h.acquire()
		b, release = h.b, h.unref
	}
	if !ok {
		op := "read npy"
		if f.meta {
			op = "read json"
		}
		start := time.Now()
		var err error
		if b, err = f.dir.b.Get(markLook(ctx), f.n); err != nil {
			return nil, errno(f.dir.opts.Log, err, op, f.n)
		}
		wait, release = time.Since(start), b.Release
	}
	var res *pinnedResult
	switch {
	case f.meta:
		res = window([][]byte{b.Meta()}, off, int64(len(dest)))
	case f.part >= 0:
		pt := f.dir.parts[f.part]
		res = window(b.NPY(), pt.Off+min(off, pt.Size), min(int64(len(dest)), pt.Size-min(off, pt.Size)))
	default:
		res = window(b.NPY(), off, int64(len(dest)))
	}
	if rec := f.dir.opts.Recorder; rec != nil {
		rec(f.n, f.dir.val, res.Size(), wait)
	}
	if res.Size() == 0 {
		// go-fuse sends an empty reply without calling Done: release now.
		release()
		return fuse.ReadResultData(nil), 0
	}
	res.release = release
	return res, 0
}

// window returns the bytes [off, off+size) of the concatenation of parts,
// as sub-slices of parts (no copy).
func window(parts [][]byte, off, size int64) *pinnedResult {
	res := &pinnedResult{}
	for _, p := range parts {
		if size <= 0 {
			break
		}
		if off >= int64(len(p)) {
			off -= int64(len(p))
			continue
		}
		end := min(int64(len(p)), off+size)
		res.vecs = append(res.vecs, p[off:end])
		res.size += int(end - off)
		size -= end - off
		off = 0
	}
	return res
}

// pinnedResult serves slices of a built batch with writev and releases the
// batch once go-fuse has sent them to the kernel.
type pinnedResult struct {
	vecs    [][]byte
	size    int
	release func()
	once    sync.Once
}

var _ fuse.ReadResult = (*pinnedResult)(nil)

func (r *pinnedResult) Size() int { return r.size }

func (r *pinnedResult) Bytes(buf []byte) ([]byte, fuse.Status) {
	if len(r.vecs) == 1 {
		return r.vecs[0], fuse.OK
	}
	out := buf[:0]
	for _, v := range r.vecs {
		out = append(out, v...)
	}
	return out, fuse.OK
}

// Slices lets go-fuse write the parts with writev(2), without joining them.
func (r *pinnedResult) Slices() ([][]byte, fuse.Status) { return r.vecs, fuse.OK }

func (r *pinnedResult) Done() {
	r.once.Do(func() {
		if r.release != nil {
			r.release()
		}
	})
}
