package batch

import "fmt"

// buffer is the memory of one batch. A heap buffer holds the array bytes
// only (the .npy header is shared by every batch of a scheduler); a memfd
// buffer holds the whole .npy file, header then array, in a memfd of its
// own mapped into the daemon, so that the kernel can serve reads and
// mappings of the file from it directly (FUSE passthrough). A batch of
// several files (Config.Parts) is one buffer for its builder, one range of
// the daemon's address space, but each file is a memfd of its own mapped
// at its place in that range, so that each file too is served from its
// memfd's offset 0.
//
// A memfd buffer is lent to the kernel as read-only descriptions of its
// memfds (Batch.BackingFd, Batch.PartBackingFd). The kernel serves a file
// from the description, and a reader's mapping of that file holds the
// description, past the file's close and the batch's release. The buffer
// is reused for another batch only once every description lent, of any
// of its memfds, has been closed for good, which the scheduler learns from
// inotify (IN_CLOSE_NOWRITE on each memfd): until then it stays counted in
// the budget, as a mapped file's batch is pinned when served through the
// page cache.
type buffer struct {
	frames []byte // the array bytes (with Config.Parts: the whole range)
	npy    []byte // a memfd of the whole .npy file: its mapping; nil otherwise
	mem    []byte // memfd: the mapping to unmap (npy, or the range of the parts)
	fds    []int  // memfd: the descriptors, one per file; nil on the heap

	wds     []int // memfd: their inotify watches, once watched
	lent    int   // guarded by Scheduler.mu: descriptions lent and not yet closed for good
	cooling bool  // guarded by Scheduler.mu: evicted, waiting for lent to reach 0
}

func heapBuffer(size int64) *buffer { return &buffer{frames: make([]byte, size)} }

// Part is one file of a batch of several (Config.Parts): bytes
// [Off, Off+Size) of the batch's buffer.
type Part struct {
	Off, Size int64
}

// tiles checks that parts cover [0, size) page by page: the first starts
// at 0, each next one on the page after the previous one's last byte, and
// the last one's last page ends at size.
func tiles(size int64, parts []Part, page int64) error {
	var at int64
	for i, p := range parts {
		if p.Off != at || p.Size <= 0 {
			return fmt.Errorf("part %d at %d (%d bytes) of a batch: parts must be consecutive, each on a page of %d bytes (next at %d)", i, p.Off, p.Size, page, at)
		}
		at = (p.Off + p.Size + page - 1) / page * page
	}
	if at != size || len(parts) == 0 {
		return fmt.Errorf("%d parts end at %d in a batch of %d bytes: they must fill it to a page", len(parts), at, size)
	}
	return nil
}
