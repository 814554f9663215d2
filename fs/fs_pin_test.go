package fs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOpenFilePinsItsBatch: an open batch file gets its batch once, at
// open, and holds it until closed, however many reads it serves: a batch
// cannot be evicted between two reads of an open file.
func TestOpenFilePinsItsBatch(t *testing.T) {
	for _, direct := range []bool{true, false} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			train := &fakeBatches{n: 2, frames: 1 << 20, meta: true}
			dir, _ := mountFake(t, train, nil, MountOptions{DirectIO: direct})
			f, err := os.Open(filepath.Join(dir, "batches", "000001.npy"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if p := train.pinned.Load(); p != 1 {
				t.Fatalf("%d batches pinned after open, want 1", p)
			}
			var got []byte
			buf := make([]byte, 4096)
			for {
				n, err := f.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if p := train.pinned.Load(); p != 1 {
					t.Fatalf("%d batches pinned between reads, want 1", p)
				}
			}
			if !bytes.Equal(got, train.want(1)) {
				t.Fatal("content differs")
			}
			if g := train.gets.Load(); g != 1 {
				t.Fatalf("%d gets for one open file read in 4 KiB pieces, want 1", g)
			}
			f.Close()
			// The kernel sends RELEASE after close returns.
			for deadline := time.Now().Add(10 * time.Second); train.pinned.Load() != 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if p := train.pinned.Load(); p != 0 {
				t.Fatalf("%d batches pinned after close, want 0", p)
			}
		})
	}
}
