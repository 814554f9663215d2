package fs

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
)

// getdents lists dir with getdents(2) alone, as ls does, and returns the
// names and inode numbers in listing order.
func getdents(t *testing.T, dir string) (names []string, inos []uint64) {
	t.Helper()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	buf := make([]byte, 1<<16)
	for {
		n, err := syscall.Getdents(fd, buf)
		if err != nil {
			t.Fatalf("getdents %s: %v", dir, err)
		}
		if n == 0 {
			return names, inos
		}
		for off := 0; off < n; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name
			rec := buf[off:]
			reclen := int(rec[16]) | int(rec[17])<<8
			name := rec[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			if s := string(name); s != "." && s != ".." {
				names = append(names, s)
				var ino uint64
				for i := 7; i >= 0; i-- {
					ino = ino<<8 | uint64(rec[i])
				}
				inos = append(inos, ino)
			}
			off += reclen
		}
	}
}

// mountBounded mounts batches fake batch files with a bound of maxNodes
// batch file nodes, unmounted when the test ends.
func mountBounded(t *testing.T, batches int64, maxNodes int) (*fakeBatches, string, *Server) {
	t.Helper()
	train := &fakeBatches{n: batches, frames: 16, meta: true}
	dir := t.TempDir()
	srv, err := Mount(dir, Options{
		Train:    train,
		Info:     func() []byte { return []byte(`{}`) },
		Stats:    func() []byte { return []byte(`{}`) },
		MaxNodes: maxNodes,
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, MountOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return train, dir, srv
}

// TestListingHoldsBoundedNodes: listing a directory of 40,000 entries
// twice, then looking every entry up, holds at most MaxNodes batch file
// nodes; the entries past the bound are invalidated and the kernel forgets
// them, and every name keeps its inode number throughout.
func TestListingHoldsBoundedNodes(t *testing.T) {
	testkit.RequireFUSE(t)
	const batches, maxNodes = 20000, 256
	train, dir, srv := mountBounded(t, batches, maxNodes)
	bdir := filepath.Join(dir, "batches")
	wantIno := func(i int) uint64 { return batchIno(0, int64(i/2), i%2 == 1) }
	for pass := range 2 {
		names, inos := getdents(t, bdir)
		if len(names) != 2*batches {
			t.Fatalf("listing %d: %d entries, want %d", pass, len(names), 2*batches)
		}
		for i, name := range names {
			want := fmt.Sprintf("%06d.npy", i/2)
			if i%2 == 1 {
				want = fmt.Sprintf("%06d.json", i/2)
			}
			if name != want || inos[i] != wantIno(i) {
				t.Fatalf("listing %d, entry %d: %s ino %d, want %s ino %d", pass, i, name, inos[i], want, wantIno(i))
			}
		}
		if held, _, _ := srv.Nodes(); held > maxNodes {
			t.Fatalf("listing %d: %d nodes held, bound %d", pass, held, maxNodes)
		}
	}
	for i := range 2 * batches {
		name := fmt.Sprintf("%06d.npy", i/2)
		size := int64(len(fakeHeader)) + 16
		if i%2 == 1 {
			name, size = fmt.Sprintf("%06d.json", i/2), 0
		}
		st, err := os.Lstat(filepath.Join(bdir, name))
		if err != nil {
			t.Fatal(err)
		}
		if ino := st.Sys().(*syscall.Stat_t).Ino; ino != wantIno(i) || st.Size() != size {
			t.Fatalf("%s: ino %d size %d, want ino %d size %d", name, ino, st.Size(), wantIno(i), size)
		}
	}
	// Invalidations run behind the lookups, which they never hold up.
	testkit.WaitFor(t, 30*time.Second, 10*time.Millisecond, "the nodes held to come back within the bound", func() bool {
		held, _, _ := srv.Nodes()
		return held <= maxNodes
	})
	_, _, invalidated := srv.Nodes()
	if invalidated < 2*batches-2*maxNodes {
		t.Fatalf("after a lookup of every entry: %d invalidated, want ≥ %d", invalidated, 2*batches-2*maxNodes)
	}
	testkit.WaitFor(t, 30*time.Second, 10*time.Millisecond, "the kernel to forget the invalidated entries", func() bool {
		return srv.nodes.forgotten.Load() >= invalidated-maxNodes
	})
	if train.gets.Load() != 0 {
		t.Fatalf("listing and lookups built %d batches", train.gets.Load())
	}
}

// TestRelistingKeepsNodes: listing a directory within the node bound
// again (READDIRPLUS looks every entry up again) reuses the nodes the
// kernel holds: the count stays one per entry and nothing is invalidated.
func TestRelistingKeepsNodes(t *testing.T) {
	testkit.RequireFUSE(t)
	const batches, maxNodes = 100, 256
	_, dir, srv := mountBounded(t, batches, maxNodes)
	for pass := range 3 {
		if names, _ := getdents(t, filepath.Join(dir, "batches")); len(names) != 2*batches {
			t.Fatalf("listing %d: %d entries", pass, len(names))
		}
		for i := range batches {
			if _, err := os.Lstat(filepath.Join(dir, "batches", fmt.Sprintf("%06d.npy", i))); err != nil {
				t.Fatal(err)
			}
		}
		if held, _, invalidated := srv.Nodes(); held != 2*batches || invalidated != 0 {
			t.Fatalf("after listing %d: %d nodes held, %d invalidated; want %d and 0", pass, held, invalidated, 2*batches)
		}
	}
}
