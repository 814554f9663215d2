package batch

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// memfdBuffer returns a memfd of the header and size bytes after it,
// mapped shared, the header written. It runs under the scheduler's lock,
// so it does not populate the mapping (about 25 ms for a 25 MB batch
// here): the first build faults the pages in, in the decode workers, for
// about the same total cost.
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
	mem, err := unix.Mmap(fd, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mapping a memfd of %d bytes: %w", n, err)
	}
	copy(mem, header)
	return &buffer{frames: mem[len(header):], npy: mem, fd: fd, wd: -1}, nil
}

// free unmaps and closes a memfd buffer: its pages go back to the system
// once no reader maps them any more. A heap buffer is left to the
// collector.
func (b *buffer) free() {
	if b.fd < 0 {
		return
	}
	unix.Munmap(b.npy)
	unix.Close(b.fd)
	b.fd, b.npy, b.frames = -1, nil, nil
}

// fdPath names a descriptor of this process for open(2).
func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// lend opens a new read-only description of the memfd, for the kernel to
// serve a file from.
func (b *buffer) lend() (int, error) {
	return unix.Open(fdPath(b.fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
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

// watch starts watching b's memfd.
func (r *returns) watch(b *buffer) error {
	wd, err := unix.InotifyAddWatch(int(r.f.Fd()), fdPath(b.fd), unix.IN_CLOSE_NOWRITE)
	if err != nil {
		return fmt.Errorf("inotify_add_watch on a memfd: %w", err)
	}
	b.wd = wd
	return nil
}

// unwatch stops watching b's memfd (before it is freed).
func (r *returns) unwatch(b *buffer) {
	if b.wd >= 0 {
		unix.InotifyRmWatch(int(r.f.Fd()), uint32(b.wd))
		b.wd = -1
	}
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
