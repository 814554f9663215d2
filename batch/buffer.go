package batch

// buffer is the memory of one batch. A heap buffer holds the array bytes
// only (the .npy header is shared by every batch of a scheduler); a memfd
// buffer holds the whole .npy file, header then array, in a memfd of its
// own mapped into the daemon, so that the kernel can serve reads and
// mappings of the file from it directly (FUSE passthrough).
type buffer struct {
	frames []byte // the array bytes
	npy    []byte // memfd: the mapping of the whole file; nil on the heap
	fd     int    // memfd: the descriptor; -1 on the heap
}

func heapBuffer(size int64) *buffer { return &buffer{frames: make([]byte, size), fd: -1} }
