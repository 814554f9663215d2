package rlds

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// fileIDOf returns the identity of the open file f (statx on its
// descriptor, so the file read, not whatever its name now points to), and
// false when f is not an open file. btime is 0 where the file system
// keeps no birth time.
func fileIDOf(f shardFile) (fileID, bool) {
	c, ok := f.(syscall.Conn)
	if !ok {
		return fileID{}, false
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return fileID{}, false
	}
	var st unix.Statx_t
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.Statx(int(fd), "", unix.AT_EMPTY_PATH|unix.AT_STATX_SYNC_AS_STAT,
			unix.STATX_BASIC_STATS|unix.STATX_BTIME, &st)
	}); err != nil || serr != nil {
		return fileID{}, false
	}
	ns := func(t unix.StatxTimestamp) int64 { return t.Sec*1e9 + int64(t.Nsec) }
	id := fileID{
		dev: unix.Mkdev(st.Dev_major, st.Dev_minor), ino: st.Ino, size: int64(st.Size),
		mtime: ns(st.Mtime), ctime: ns(st.Ctime),
	}
	if st.Mask&unix.STATX_BTIME != 0 {
		id.btime = ns(st.Btime)
	}
	return id, true
}
