package fs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// MountOptions are the mount-level switches.
type MountOptions struct {
	// AllowOther lets other users read the mount (needs user_allow_other
	// in /etc/fuse.conf when not root).
	AllowOther bool
	// Debug logs every FUSE request.
	Debug bool
	// Passthrough serves .npy files by FUSE passthrough where the kernel
	// allows it (Linux 6.9 or later, and CAP_SYS_ADMIN): each batch whose
	// Batch is a BackingFder hands the kernel its memfd, and reads and
	// mappings go from the memfd to the reader without this process.
	// Where the kernel refuses, files are served as without it, and
	// Server.Serving says so. A part file of a Parted view is served so
	// when its Batch is a PartBackingFder that lends the part's memfd.
	Passthrough bool
	// DirectIO serves .npy files with direct I/O instead of through the
	// page cache: faster large reads, but files cannot be mmapped. It
	// turns Passthrough off.
	DirectIO bool
	// NonEmpty allows mounting over a directory that holds files (they are
	// hidden while mounted). Mounting over a live oxefs mount is refused
	// whatever this says.
	NonEmpty bool
}

// ErrNotEmpty is returned by Mount for a mountpoint that holds files when
// MountOptions.NonEmpty is not set.
var ErrNotEmpty = errors.New("not empty")

// Serving modes of .npy files (Server.Serving).
const (
	ServePassthrough = "passthrough" // the kernel reads the batch's memfd
	ServePageCache   = "page-cache"  // the daemon answers reads; the kernel caches them
	ServeDirectIO    = "direct-io"   // the daemon answers every read, nothing cached
)

// serving is how .npy files are served, decided once the mount is up.
type serving struct {
	passthrough atomic.Bool
}

// Server is a live mount.
type Server struct {
	srv  *fuse.Server
	dir  string
	dev  uint64 // the mount's device: its minor is the fusectl connection
	open *atomic.Int64
	// opens answered with FOPEN_PASSTHROUGH
	passthroughOpens *atomic.Int64
	stopOpens        context.CancelFunc
	serve            *serving
	mode             string
	refused          error // why passthrough was not used, when it was asked for
	nodes            *nodeBound
}

// Mount serves opts at dir until Unmount. dir must be an empty directory
// (or mo.NonEmpty set) and not a live oxefs mount; a stale mount left there
// by a crashed daemon is cleaned first, and logged.
func Mount(dir string, opts Options, mo MountOptions) (*Server, error) {
	if (opts.Train == nil && len(opts.Ranks) == 0) || opts.Info == nil || opts.Stats == nil || opts.Log == nil {
		return nil, errors.New("fs: Options needs Train (or Ranks), Info, Stats and Log")
	}
	for _, r := range opts.Ranks {
		if r.Train == nil || r.Info == nil || r.Stats == nil {
			return nil, fmt.Errorf("fs: rank %d needs Train, Info and Stats", r.Rank)
		}
	}
	for _, b := range []Batches{opts.Train, opts.Val} {
		if err := checkParts(b); err != nil {
			return nil, err
		}
	}
	for _, r := range opts.Ranks {
		for _, b := range []Batches{r.Train, r.Val} {
			if err := checkParts(b); err != nil {
				return nil, fmt.Errorf("rank %d: %w", r.Rank, err)
			}
		}
	}
	if err := CleanStale(dir, opts.Log); err != nil {
		return nil, err
	}
	if err := checkMountpoint(dir, mo.NonEmpty); err != nil {
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
			DisableSplice:      true,  // batches are in memory: writev beats a pipe
			DisableReadDirPlus: false, // READDIRPLUS: stat builds nothing, so a listing may carry attributes
			DisableXAttrs:      true,
			DirectMount:        os.Geteuid() == 0,
			Options:            []string{"ro"}, // the kernel answers writes with EROFS
		},
	}
	opens, stopOpens := context.WithCancel(context.Background())
	serve := &serving{}
	nodes := newNodeBound(opts.MaxNodes)
	raw := &countingFS{RawFileSystem: gofs.NewNodeFS(&root{opts: opts, directIO: mo.DirectIO, serve: serve, opens: opens, nodes: nodes}, fopts)}
	srv, err := fuse.NewServer(raw, dir, &fopts.MountOptions)
	if err != nil {
		stopOpens()
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		stopOpens()
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	served := make(chan struct{})
	go func() {
		srv.Wait()
		close(served)
	}()
	go nodes.run(served)
	s := &Server{srv: srv, dir: dir, open: &raw.open, passthroughOpens: &raw.passthrough, stopOpens: stopOpens, serve: serve, mode: ServePageCache, nodes: nodes}
	switch {
	case mo.DirectIO:
		s.mode = ServeDirectIO
	case mo.Passthrough:
		if s.refused = probePassthrough(srv); s.refused == nil {
			serve.passthrough.Store(true)
			s.mode = ServePassthrough
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err == nil {
		s.dev = st.Dev
	}
	return s, nil
}

// probePassthrough registers a memfd as a backing file and unregisters
// it: the kernel allows passthrough on this connection exactly when that
// works (it needs FUSE_PASSTHROUGH, negotiated at init from Linux 6.9, and
// CAP_SYS_ADMIN).
func probePassthrough(srv *fuse.Server) error {
	fd, err := unix.MemfdCreate("oxefs-probe", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("memfd_create: %w", err)
	}
	defer unix.Close(fd)
	id, errno := srv.RegisterBackingFd(&fuse.BackingMap{Fd: int32(fd)})
	if errno != 0 {
		return fmt.Errorf("the kernel refused a backing file: %w (FUSE passthrough needs Linux 6.9 or later and CAP_SYS_ADMIN, e.g. root)", errno)
	}
	if errno := srv.UnregisterBackingFd(id); errno != 0 {
		return fmt.Errorf("unregistering the probe's backing file: %w", errno)
	}
	return nil
}

// Serving says how .npy files are served: ServePassthrough,
// ServePageCache or ServeDirectIO. When passthrough was asked for and
// refused, Refused says why.
func (s *Server) Serving() string { return s.mode }

// Refused is why passthrough was not used although MountOptions asked for
// it, or nil.
func (s *Server) Refused() error { return s.refused }

// PassthroughOpens is the number of opens the kernel serves by
// passthrough: those answered with FOPEN_PASSTHROUGH. (go-fuse asks a
// batch for its memfd once per inode while the kernel has no backing file
// for it; every open of the inode meanwhile is passthrough too. Should
// the kernel refuse a backing file, go-fuse serves every later open
// without passthrough, and this count stops growing.)
func (s *Server) PassthroughOpens() int64 { return s.passthroughOpens.Load() }

// Nodes reports the batch file nodes held for the kernel now, their bound
// (Options.MaxNodes) and how many entries were invalidated so far to keep
// within it.
func (s *Server) Nodes() (held, max int, invalidated int64) {
	return s.nodes.held(), s.nodes.max, s.nodes.invalidated.Load()
}

// Unmount unmounts. When files are still open the plain unmount is busy:
// the mount is then detached (lazy unmount) and its connection aborted, so
// a reader holding a file open never keeps the daemon from exiting (what
// it reads then: see Abort).
func (s *Server) Unmount() error {
	err := s.srv.Unmount()
	if err == nil {
		return nil
	}
	if lerr := s.Detach(); lerr != nil {
		return fmt.Errorf("unmount %s: %w (%v)", s.dir, err, lerr)
	}
	s.Abort()
	return nil
}

// Detach unmounts lazily: the mount leaves the namespace at once, so no new
// open reaches it, while the files already open (and mapped) are served
// until they are closed. When the last one is, the connection ends and Wait
// returns.
func (s *Server) Detach() error { return lazyUnmount(s.dir) }

// StopOpens fails the opens still waiting for their batch (with
// ErrShuttingDown, EIO) and every later one. After Detach no new open
// arrives, but one already waiting for a build holds the detached mount
// alive; shutdown must not wait for such a build. Files already open are
// not affected.
func (s *Server) StopOpens() { s.stopOpens() }

// OpenFiles is the number of files open on the mount now (a mapped file
// counts until it is unmapped).
func (s *Server) OpenFiles() int64 { return s.open.Load() }

// Abort ends a detached mount's connection through fusectl, so the serve
// loops end and Wait returns. A file still open then reads as after the
// daemon's death: served by passthrough, it goes on reading from its
// memfd (only its close reports ENOTCONN); otherwise what the page cache
// holds still reads and the rest is ENOTCONN, or SIGBUS on a mapping
// (TestDeadDaemonOpenFiles). It reports false when fusectl is not mounted
// (/sys/fs/fuse/connections): the connection then ends when this process
// exits.
func (s *Server) Abort() bool {
	if s.dev == 0 {
		return false
	}
	minor := (s.dev & 0xff) | ((s.dev >> 12) & 0xfff00)
	abort := fmt.Sprintf("/sys/fs/fuse/connections/%d/abort", minor)
	if err := os.WriteFile(abort, []byte("1"), 0); err != nil {
		return false
	}
	s.srv.Wait()
	return true
}

// Wait blocks until the mount is gone (unmounted by Unmount or from outside,
// e.g. fusermount3 -u, or detached and its last file closed).
func (s *Server) Wait() { s.srv.Wait() }

// countingFS counts the files open on the mount: opens that succeeded less
// releases. The kernel releases a file when its last descriptor is closed
// and its last mapping is gone.
type countingFS struct {
	fuse.RawFileSystem
	open        atomic.Int64
	passthrough atomic.Int64 // opens answered with FOPEN_PASSTHROUGH
}

func (c *countingFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	st := c.RawFileSystem.Open(cancel, in, out)
	if st.Ok() {
		c.open.Add(1)
		if out.OpenFlags&fuse.FOPEN_PASSTHROUGH != 0 {
			c.passthrough.Add(1)
		}
	}
	return st
}

func (c *countingFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	c.RawFileSystem.Release(cancel, in)
	c.open.Add(-1)
}

// lazyUnmount detaches the mount at dir (MNT_DETACH), through fusermount3
// when not root.
func lazyUnmount(dir string) error {
	err := syscall.Unmount(dir, syscall.MNT_DETACH)
	if err == nil {
		return nil
	}
	out, ferr := exec.Command("fusermount3", "-u", "-z", dir).CombinedOutput()
	if ferr != nil {
		return fmt.Errorf("lazy unmount of %s: %w; fusermount3 -u -z: %v: %s", dir, err, ferr, bytes.TrimSpace(out))
	}
	return nil
}

// checkMountpoint refuses a mountpoint that is a live oxefs mount (stacking
// on it would hide the first daemon's batches from its readers) or, unless
// nonEmpty, a directory that holds files (mounting would hide them).
func checkMountpoint(dir string, nonEmpty bool) error {
	fstype, err := mountType(dir)
	if err != nil {
		return err
	}
	if fstype == "fuse.oxefs" {
		pid := "unknown"
		var info struct {
			PID *int `json:"pid"`
		}
		if b, err := os.ReadFile(filepath.Join(dir, "info.json")); err == nil && json.Unmarshal(b, &info) == nil && info.PID != nil {
			pid = strconv.Itoa(*info.PID)
		}
		return fmt.Errorf("mountpoint %s is already an oxefs mount, pid %s: stop that daemon or unmount it (fusermount3 -u %s), or mount on another directory",
			dir, pid, dir)
	}
	if nonEmpty {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("mountpoint %s: %w", dir, err)
	}
	names, err := d.Readdirnames(3)
	d.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("mountpoint %s: %w", dir, err)
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("mountpoint %s (holding %s) is %w", dir, strings.Join(names, ", "), ErrNotEmpty)
}

// mountType returns the filesystem type of the mount whose mount point is
// dir (e.g. "fuse.oxefs"), or "" when dir is not a mount point, from
// /proc/self/mountinfo. The last mount listed is the one on top.
func mountType(dir string) (string, error) {
	path, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("mountpoint %s: %w", dir, err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return "", fmt.Errorf("mountpoint %s: %w", dir, err)
	}
	f, err := os.Open("/proc/self/mountinfo")
	if errors.Is(err, os.ErrNotExist) {
		return "", nil // no /proc: nothing to check against
	} else if err != nil {
		return "", fmt.Errorf("checking mountpoint %s: %w", dir, err)
	}
	defer f.Close()
	fstype := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// 36 35 98:0 /root /mnt/point rw,noatime master:1 - fuse.oxefs oxefs ro,...
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		if unescapeMountinfo(fields[4]) == path {
			fstype = fields[sep+1]
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("checking mountpoint %s: /proc/self/mountinfo: %w", dir, err)
	}
	return fstype, nil
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// CleanStale unmounts a dead FUSE mount at dir: one whose daemon crashed,
// which answers every access with ENOTCONN ("transport endpoint is not
// connected"), and logs that it did. A live mount or a plain directory is
// left alone.
func CleanStale(dir string, log *slog.Logger) error {
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
	// Not root: lazyUnmount asks fusermount3, which may unmount the user's own.
	if uerr := lazyUnmount(dir); uerr != nil {
		return fmt.Errorf("mountpoint %s is a stale mount (%v) and could not be unmounted: %w", dir, err, uerr)
	}
	if err := syscall.Statfs(dir, &sfs); err != nil {
		return fmt.Errorf("mountpoint %s after cleaning a stale mount: %w", dir, err)
	}
	log.Warn("cleaned a stale mount left by a daemon that died", "mountpoint", dir, "was", err)
	return nil
}
