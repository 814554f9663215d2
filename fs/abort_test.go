package fs

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestDeadDaemonOpenFiles pins what a reader of a file opened before the
// daemon's connection ends (--grace over, a second signal, or the daemon
// killed: the same end of the connection) sees, per serving mode, as the
// README states it:
//   - passthrough: the kernel goes on serving reads from the batch's memfd,
//     which the open file keeps alive: every byte, also those never read
//     before, and a mapping keeps its pages; only close reports ENOTCONN
//     (the flush the kernel can no longer send);
//   - page-cache: bytes the kernel has cached still read; the rest is
//     ENOTCONN;
//   - direct-io: every read is ENOTCONN.
//
// The daemon is a child process, killed with SIGKILL.
func TestDeadDaemonOpenFiles(t *testing.T) {
	const frames = 1 << 20
	fake := &fakeBatches{n: 2, frames: frames}
	if env := os.Getenv("OXEFS_TEST_DEAD_DAEMON"); env != "" {
		dir, mode, _ := strings.Cut(env, ":")
		var train Batches = fake
		mo := MountOptions{DirectIO: mode == ServeDirectIO}
		if mode == ServePassthrough {
			train, mo.Passthrough = memfdBatches{fake, t}, true
		}
		srv, err := Mount(dir, Options{Train: train, Info: func() []byte { return nil },
			Stats: func() []byte { return nil }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, mo)
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString(srv.Serving() + "\n")
		select {}
	}
	testkit.RequireFUSE(t)
	for _, mode := range []string{ServePassthrough, ServePageCache, ServeDirectIO} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestDeadDaemonOpenFiles$")
			cmd.Env = append(os.Environ(), "OXEFS_TEST_DEAD_DAEMON="+dir+":"+mode)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			kill := func() {
				cmd.Process.Kill()
				cmd.Wait()
			}
			t.Cleanup(func() {
				kill()
				lazyUnmount(dir)
			})
			line := make([]byte, len(mode)+1)
			if _, err := io.ReadFull(out, line); err != nil || string(line) != mode+"\n" {
				if mode == ServePassthrough && strings.HasPrefix(string(line), ServePageCache) {
					t.Skip("SKIPPING: this kernel refuses FUSE passthrough")
				}
				t.Fatalf("the daemon serves %q (%v), want %s", line, err, mode)
			}
			f, err := os.Open(filepath.Join(dir, "batches", "000001.npy"))
			if err != nil {
				t.Fatal(err)
			}
			want := fake.want(1)
			head := make([]byte, 4096)
			if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, want[:4096]) {
				t.Fatalf("first read: %v", err)
			}
			var mapped []byte
			if mode == ServePassthrough {
				if mapped, err = unix.Mmap(int(f.Fd()), 0, len(want), unix.PROT_READ, unix.MAP_SHARED); err != nil {
					t.Fatal(err)
				}
				defer unix.Munmap(mapped)
			}
			kill()
			var sfs syscall.Statfs_t
			if err := syscall.Statfs(dir, &sfs); !errors.Is(err, syscall.ENOTCONN) {
				t.Fatalf("after the daemon died: statfs %v, want ENOTCONN", err)
			}
			again := make([]byte, 4096)
			_, errHead := f.ReadAt(again, 0)
			tail := make([]byte, 4096)
			_, errTail := f.ReadAt(tail, int64(len(want)-4096))
			errClose := f.Close()
			t.Logf("%s, the daemon dead: read of the head %v, of the unread tail %v, close %v", mode, errHead, errTail, errClose)
			switch mode {
			case ServePassthrough:
				if errHead != nil || errTail != nil || !bytes.Equal(again, want[:4096]) || !bytes.Equal(tail, want[len(want)-4096:]) {
					t.Errorf("read of the head %v, of the unread tail %v, want both whole and right", errHead, errTail)
				}
				if !errors.Is(errClose, syscall.ENOTCONN) {
					t.Errorf("close %v, want ENOTCONN", errClose)
				}
				if !bytes.Equal(mapped, want) {
					t.Error("a mapping made before the daemon died does not hold the batch")
				}
			case ServePageCache:
				if errHead != nil || !bytes.Equal(again, want[:4096]) {
					t.Errorf("read of the cached head %v, want its bytes", errHead)
				}
				if !errors.Is(errTail, syscall.ENOTCONN) {
					t.Errorf("read of the unread tail %v, want ENOTCONN", errTail)
				}
			case ServeDirectIO:
				if !errors.Is(errHead, syscall.ENOTCONN) || !errors.Is(errTail, syscall.ENOTCONN) {
					t.Errorf("reads %v, %v, want ENOTCONN", errHead, errTail)
				}
			}
		})
	}
}
