package fs

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// The kernel keeps an inode for every name it has looked up, and go-fuse
// keeps a node for every inode the kernel keeps, until the kernel sends
// FORGET. The kernel forgets only under its own memory pressure, so a
// listing that gave every entry an inode would grow the daemon by a node
// per entry, about 600 bytes, far outside --mem: 2M entries held 1.2 GB.
// So batch file nodes are bounded (Options.MaxNodes, see NodeBytes):
//
//   - A listing gives an entry its attributes (READDIRPLUS), and so a node,
//     only while fewer than the bound are held; past it, entries carry
//     their name, type and inode number only, and the kernel makes no
//     inode for them (a zero node id in READDIRPLUS means just that). A
//     `stat` of such an entry is a LOOKUP as without READDIRPLUS.
//   - A LOOKUP always answers with a node; when that takes the count past
//     the bound, the oldest nodes' entries are invalidated in the kernel
//     (FUSE_NOTIFY_INVAL_ENTRY). The kernel then drops the entry, and with
//     it the inode unless a file of it is open, and sends FORGET, on which
//     go-fuse drops the node (NodeOnForgetter). Batch files keep their
//     inode numbers (batchIno), so an entry looked up again is the same
//     file.
//
// The invalidations are sent from a goroutine of their own: the kernel
// takes the directory's lock to apply one, which a LOOKUP or READDIRPLUS
// in progress holds. So lookups never wait for them, and the count may run
// past the bound for as long as they take to catch up.

// NodeBytes is what the daemon holds per batch file node, go-fuse's and
// fs's together, rounded up from the measured ~600 bytes (see
// TestMountListingMemoryBound in e2e).
const NodeBytes = 1 << 10

// DefaultMaxNodes bounds batch file nodes when Options.MaxNodes is 0.
const DefaultMaxNodes = 1 << 16

// MaxNodesFor is the node bound for a daemon whose memory bound is mem: a
// 32nd of it in nodes of NodeBytes, and at least 1024.
func MaxNodesFor(mem int64) int {
	return int(max(mem/32/NodeBytes, 1024))
}

// nodeBound counts the batch file nodes held for the kernel and has the
// oldest forgotten when there are too many.
type nodeBound struct {
	// constants
	max  int
	wake chan struct{} // a send asks run to check the count

	invalidated atomic.Int64 // entries invalidated so far
	forgotten   atomic.Int64 // nodes the kernel forgot so far

	mu         sync.Mutex
	head, tail *batchFile // guarded by mu: held nodes, oldest first
	n          int        // guarded by mu: nodes in the list
}

func newNodeBound(max int) *nodeBound {
	if max <= 0 {
		max = DefaultMaxNodes
	}
	return &nodeBound{max: max, wake: make(chan struct{}, 1)}
}

// room reports whether a listing may give one more entry a node.
func (b *nodeBound) room() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n < b.max
}

// held is the number of nodes counted now.
func (b *nodeBound) held() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// add counts a node just made for a lookup. A node that lost a race to
// another lookup of the same name (go-fuse keeps the first) is never
// forgotten; it leaves the list as the oldest, like any other.
func (b *nodeBound) add(f *batchFile) {
	b.mu.Lock()
	f.prev, f.next, f.listed = b.tail, nil, true
	if b.tail != nil {
		b.tail.next = f
	} else {
		b.head = f
	}
	b.tail = f
	b.n++
	over := b.n > b.max
	b.mu.Unlock()
	if over {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// forgot uncounts a node the kernel forgot.
func (b *nodeBound) forgot(f *batchFile) {
	b.forgotten.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if f.listed {
		b.unlinkLocked(f)
	}
}

func (b *nodeBound) unlinkLocked(f *batchFile) {
	if f.prev != nil {
		f.prev.next = f.next
	} else {
		b.head = f.next
	}
	if f.next != nil {
		f.next.prev = f.prev
	} else {
		b.tail = f.prev
	}
	f.prev, f.next, f.listed = nil, nil, false
	b.n--
}

// oldest takes the oldest node off the list while there are too many.
func (b *nodeBound) oldest() *batchFile {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n <= b.max {
		return nil
	}
	f := b.head
	b.unlinkLocked(f)
	return f
}

// run invalidates the entries of the oldest nodes while there are too
// many, until done is closed. An invalidation the kernel refuses (the
// entry is gone already, or the mount is) needs nothing more.
func (b *nodeBound) run(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-b.wake:
		}
		for f := b.oldest(); f != nil; f = b.oldest() {
			f.dir.NotifyEntry(f.name())
			b.invalidated.Add(1)
			select {
			case <-done:
				return
			default:
			}
		}
	}
}

// listing is an open batch directory: it lists 000000.npy, 000000.json,
// ... (or a Parted view's parts, see Readdirent) without materialising
// the list (a mount may hold millions of batches), and gives entries their
// attributes only while the node bound has room (see nodeBound).
type listing struct {
	dir         *batchDir
	i, len, per int64
}

var (
	_ = (gofs.NodeOpendirHandler)((*batchDir)(nil))
	_ = (gofs.FileReaddirenter)((*listing)(nil))
	_ = (gofs.FileLookuper)((*listing)(nil))
	_ = (gofs.FileSeekdirer)((*listing)(nil))
	_ = (gofs.FileReleasedirer)((*listing)(nil))
)

func (d *batchDir) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	per := max(int64(len(d.parts)), 1)
	if d.b.HasMeta() {
		per++
	}
	return &listing{dir: d, len: d.b.Len() * per, per: per}, 0, 0
}

// Readdirent returns the next entry; its offset is its position, so that
// Seekdir can return to it. A batch lists its .npy, or its parts in
// order, then its .json.
func (l *listing) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if l.i >= l.len {
		return nil, 0
	}
	n, k := l.i/l.per, int(l.i%l.per)
	l.i++
	meta, part := false, -1
	switch {
	case l.dir.parts == nil:
		meta = k == 1
	case k < len(l.dir.parts):
		part = k
	default:
		meta = true
	}
	return &fuse.DirEntry{Name: l.dir.fileName(n, meta, part), Mode: syscall.S_IFREG, Ino: l.dir.fileIno(n, meta, part), Off: uint64(l.i)}, 0
}

func (l *listing) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if off > uint64(l.len) {
		return syscall.EINVAL
	}
	l.i = int64(off)
	return 0
}

// errNoNode is what Lookup answers a READDIRPLUS entry that gets no node:
// go-fuse then sends the entry with node id 0, which the kernel takes as
// "no attributes" (not as a missing file), and nobody sees the errno.
const errNoNode = syscall.EAGAIN

// Lookup gives a listed entry its node and attributes while the node
// bound has room.
func (l *listing) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if !l.dir.nodes.room() {
		return nil, errNoNode
	}
	return l.dir.Lookup(ctx, name, out)
}

func (l *listing) Releasedir(ctx context.Context, flags uint32) {}
