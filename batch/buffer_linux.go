package batch

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// memfdBuffer returns a memfd of the header and size bytes after it,
// mapped shared, the header written. It runs under the scheduler's lock,
// so it does not populate the mapping (about 25 ms for a 25 MB batch
// here): the first build faults the pages in, in the decode workers, for
// about the same total cost.
func memfdBuffer(header []byte, size int64) (*buffer, error) {
	n := int64(len(header)) + size
	fd, err := newMemfd(n)
	if err != nil {
		return nil, err
	}
	mem, err := unix.Mmap(fd, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mapping a memfd of %d bytes: %w", n, err)
	}
	copy(mem, header)
	return &buffer{frames: mem[len(header):], npy: mem, mem: mem, fds: []int{fd}}, nil
}

// newMemfd makes a memfd of n bytes.
func newMemfd(n int64) (int, error) {
	fd, err := unix.MemfdCreate("oxefs-batch", unix.MFD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, n); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("memfd of %d bytes: %w", n, err)
	}
	return fd, nil
}

// memfdParts returns a buffer of size bytes, one range of this process's
// address space for the builder, made of one memfd per part, each exactly
// the part's size (the kernel serves a passthrough file up to its backing
// file's end) and mapped shared at the part's offset. The parts must tile
// the range page by page (see tiles): each starts on a page, where the
// previous one's last page ends. Like memfdBuffer it does not populate
// the mappings.
func memfdParts(size int64, parts []Part) (*buffer, error) {
	if err := tiles(size, parts, int64(unix.Getpagesize())); err != nil {
		return nil, err
	}
	// Reserve the range, then map each part's memfd over its place in it.
	mem, err := unix.Mmap(-1, 0, int(size), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("reserving %d bytes for a batch of %d files: %w", size, len(parts), err)
	}
	b := &buffer{frames: mem, mem: mem}
	for _, p := range parts {
		fd, err := newMemfd(p.Size)
		if err != nil {
			b.free()
			return nil, err
		}
		b.fds = append(b.fds, fd)
		at := unsafe.Pointer(&mem[p.Off])
		if _, err := unix.MmapPtr(fd, 0, at, uintptr(p.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED); err != nil {
			b.free()
			return nil, fmt.Errorf("mapping a memfd of %d bytes at %d of a batch: %w", p.Size, p.Off, err)
		}
	}
	return b, nil
}

// free unmaps and closes a memfd buffer: its pages go back to the system
// once no reader maps them any more. A heap buffer is left to the
// collector.
func (b *buffer) free() {
	if b.mem == nil {
		return
	}
	unix.Munmap(b.mem)
	for _, fd := range b.fds {
		unix.Close(fd)
	}
	b.fds, b.mem, b.npy, b.frames = nil, nil, nil, nil
}

// fdPath names a descriptor of this process for open(2).
func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// lend opens a new read-only description of memfd i (the whole .npy file's
// is 0), for the kernel to serve a file from.
func (b *buffer) lend(i int) (int, error) {
	return unix.Open(fdPath(b.fds[i]), unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// returns tells the scheduler when descriptions lent are closed for good:
// an inotify instance watching each memfd buffer for IN_CLOSE_NOWRITE,
// which the kernel sends when the last reference to a read-only
// description goes (the last mapping unmapped, the last file served from it
// released). Only lent descriptions are read-only: the daemon's own
// descriptor of each memfd is read-write.
type returns struct {
	f *os.File
}

func newReturns() (*returns, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	return &returns{f: os.NewFile(uintptr(fd), "inotify")}, nil
}

// watch starts watching each of b's memfds; on error it watches none.
func (r *returns) watch(b *buffer) error {
	for _, fd := range b.fds {
		wd, err := unix.InotifyAddWatch(int(r.f.Fd()), fdPath(fd), unix.IN_CLOSE_NOWRITE)
		if err != nil {
			r.unwatch(b)
			return fmt.Errorf("inotify_add_watch on a memfd: %w", err)
		}
		b.wds = append(b.wds, wd)
	}
	return nil
}

// unwatch stops watching b's memfds (before they are freed).
func (r *returns) unwatch(b *buffer) {
	for _, wd := range b.wds {
		unix.InotifyRmWatch(int(r.f.Fd()), uint32(wd))
	}
	b.wds = nil
}

// run calls closed(wd) for each description closed for good, and lost()
// when the kernel dropped events (its queue overflowed), until close.
func (r *returns) run(closed func(wd int), lost func()) {
	buf := make([]byte, 64*unix.SizeofInotifyEvent)
	for {
		n, err := r.f.Read(buf)
		if err != nil {
			return // closed
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int(int32(binary.NativeEndian.Uint32(buf[off:])))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			size := int(binary.NativeEndian.Uint32(buf[off+12:]))
			off += unix.SizeofInotifyEvent + size
			switch {
			case mask&unix.IN_Q_OVERFLOW != 0:
				lost()
			case mask&unix.IN_CLOSE_NOWRITE != 0:
				closed(wd)
			}
		}
	}
}

func (r *returns) close() error {
	if r == nil {
		return nil
	}
	return r.f.Close()
}
