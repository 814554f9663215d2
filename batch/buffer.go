package batch

// buffer is the memory of one batch. A heap buffer holds the array bytes
// only (the .npy header is shared by every batch of a scheduler); a memfd
// buffer holds the whole .npy file, header then array, in a memfd of its
// own mapped into the daemon, so that the kernel can serve reads and
// mappings of the file from it directly (FUSE passthrough).
//
// A memfd buffer is lent to the kernel as read-only descriptions of the
// memfd (Batch.BackingFd). The kernel serves a file from the description,
// and a reader's mapping of that file holds the description, past the
// file's close and the batch's release. The buffer is reused for another
// batch only once every description lent has been closed for good, which
// the scheduler learns from inotify (IN_CLOSE_NOWRITE on the memfd): until
// then it stays counted in the budget, as a mapped file's batch is
// pinned when served through the page cache.
type buffer struct {
	frames []byte // the array bytes
	npy    []byte // memfd: the mapping of the whole file; nil on the heap
	fd     int    // memfd: the descriptor; -1 on the heap

	wd      int  // memfd: its inotify watch, or -1
	lent    int  // guarded by Scheduler.mu: descriptions lent and not yet closed for good
	cooling bool // guarded by Scheduler.mu: evicted, waiting for lent to reach 0
}

func heapBuffer(size int64) *buffer { return &buffer{frames: make([]byte, size), fd: -1, wd: -1} }
