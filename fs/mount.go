package fs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// MountOptions are the mount-level switches.
type MountOptions struct {
	// AllowOther lets other users read the mount (needs user_allow_other
	// in /etc/fuse.conf when not root).
	AllowOther bool
	// Debug logs every FUSE request.
	Debug bool
	// DirectIO serves .npy files with direct I/O instead of through the
	// page cache: faster large reads, but files cannot be mmapped.
	DirectIO bool
}

// Server is a live mount.
type Server struct {
	srv *fuse.Server
	dir string
	dev uint64 // the mount's device: its minor is the fusectl connection
}

// Mount serves opts at dir until Unmount. dir must be an empty directory;
// a stale mount left there by a crashed daemon is cleaned first.
func Mount(dir string, opts Options, mo MountOptions) (*Server, error) {
	if opts.Train == nil || opts.Info == nil || opts.Stats == nil || opts.Log == nil {
		return nil, errors.New("fs: Options needs Train, Info, Stats and Log")
	}
	if err := CleanStale(dir); err != nil {
		return nil, err
	}
	// Names and sizes never change while mounted: cache them long.
	long := time.Hour
	fopts := &gofs.Options{
		EntryTimeout:    &long,
		AttrTimeout:     &long,
		NegativeTimeout: &long,
		MountOptions: fuse.MountOptions{
			FsName:             "oxefs",
			Name:               "oxefs",
			AllowOther:         mo.AllowOther,
			Debug:              mo.Debug,
			MaxWrite:           1 << 20,
			MaxReadAhead:       1 << 20,
			DisableSplice:      true, // batches are in memory: writev beats a pipe
			DisableReadDirPlus: true, // a listing must not build batches
			DisableXAttrs:      true,
			DirectMount:        os.Geteuid() == 0,
			Options:            []string{"ro"}, // the kernel answers writes with EROFS
		},
	}
	srv, err := gofs.Mount(dir, &root{opts: opts, directIO: mo.DirectIO}, fopts)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	s := &Server{srv: srv, dir: dir}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err == nil {
		s.dev = st.Dev
	}
	return s, nil
}

// Unmount unmounts. When files are still open the plain unmount is busy:
// the mount is then detached (lazy unmount) and its connection aborted, so
// a reader holding a file open never keeps the daemon from exiting; that
// reader's next access fails with ENOTCONN.
func (s *Server) Unmount() error {
	err := s.srv.Unmount()
	if err == nil {
		return nil
	}
	if lerr := syscall.Unmount(s.dir, syscall.MNT_DETACH); lerr != nil {
		return fmt.Errorf("unmount %s: %w (lazy unmount: %v)", s.dir, err, lerr)
	}
	// The detached connection lives on while files are open. Abort it
	// through fusectl when that is mounted, so the serve loops end; without
	// fusectl the connection ends when this process exits.
	if s.dev == 0 {
		return nil
	}
	minor := (s.dev & 0xff) | ((s.dev >> 12) & 0xfff00)
	abort := fmt.Sprintf("/sys/fs/fuse/connections/%d/abort", minor)
	if werr := os.WriteFile(abort, []byte("1"), 0); werr != nil {
		return nil
	}
	s.srv.Wait()
	return nil
}

// Wait blocks until the mount is gone (unmounted by Unmount or from outside,
// e.g. fusermount3 -u).
func (s *Server) Wait() { s.srv.Wait() }

// CleanStale unmounts a dead FUSE mount at dir: one whose daemon crashed,
// which answers every access with ENOTCONN ("transport endpoint is not
// connected"). A live mount or a plain directory is left alone.
func CleanStale(dir string) error {
	// statfs always reaches the filesystem; stat may be answered from the
	// kernel's attribute cache even on a dead mount.
	var sfs syscall.Statfs_t
	err := syscall.Statfs(dir, &sfs)
	if !errors.Is(err, syscall.ENOTCONN) {
		if err != nil {
			return fmt.Errorf("mountpoint %s: %w", dir, err)
		}
		return nil
	}
	if uerr := syscall.Unmount(dir, syscall.MNT_DETACH); uerr != nil {
		// Not root: ask fusermount3, which may unmount the user's own.
		if out, ferr := exec.Command("fusermount3", "-u", "-z", dir).CombinedOutput(); ferr != nil {
			return fmt.Errorf("mountpoint %s is a stale mount (%v) and could not be unmounted: %v; %s",
				dir, err, uerr, out)
		}
	}
	if err := syscall.Statfs(dir, &sfs); err != nil {
		return fmt.Errorf("mountpoint %s after cleaning a stale mount: %w", dir, err)
	}
	return nil
}
