package batch

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// memfdBuffer returns a memfd of the header and size bytes after it,
// mapped shared and populated (one pass that faults every page in, rather
// than a fault per page during the build), the header written.
func memfdBuffer(header []byte, size int64) (*buffer, error) {
	fd, err := unix.MemfdCreate("oxefs-batch", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	n := int64(len(header)) + size
	if err := unix.Ftruncate(fd, n); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("memfd of %d bytes: %w", n, err)
	}
	mem, err := unix.Mmap(fd, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mapping a memfd of %d bytes: %w", n, err)
	}
	copy(mem, header)
	return &buffer{frames: mem[len(header):], npy: mem, fd: fd}, nil
}

// free unmaps and closes a memfd buffer: its pages go back to the system
// once no reader maps them any more (a file the kernel serves from it
// holds a reference of its own). A heap buffer is left to the collector.
func (b *buffer) free() {
	if b.fd < 0 {
		return
	}
	unix.Munmap(b.npy)
	unix.Close(b.fd)
	b.fd, b.npy, b.frames = -1, nil, nil
}
