package lerobot

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit/cachekit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/store"
)

// TestBoundReaderReadAhead: with a read-ahead, every read returns what a
// plain read returns, bytes, count and end of object alike, whatever the
// order of offsets and sizes.
func TestBoundReaderReadAhead(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 10_000)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	d := &Dataset{Source: local.New(dir), src: store.Direct(local.New(dir))}
	obj, err := d.stat(context.Background(), "f")
	if err != nil {
		t.Fatal(err)
	}
	plain := &boundReader{ctx: context.Background(), obj: obj}
	ahead := &boundReader{ctx: context.Background(), obj: obj, ahead: 1000}
	for i := range 2000 {
		off := int64(rng.IntN(len(data) + 50))
		p1 := make([]byte, rng.IntN(1500)+1)
		p2 := make([]byte, len(p1))
		n1, err1 := plain.ReadAt(p1, off)
		n2, err2 := ahead.ReadAt(p2, off)
		if n1 != n2 || !bytes.Equal(p1[:n1], p2[:n2]) || (err1 == nil) != (err2 == nil) || (n2 < len(p2) && err2 == nil) {
			t.Fatalf("read %d: %d bytes at %d: plain %d, %v; with read-ahead %d, %v", i, len(p1), off, n1, err1, n2, err2)
		}
		if n2 < len(p2) && off <= int64(len(data)) && err2 != io.EOF {
			t.Fatalf("read %d: a short read at the end gives %v, want io.EOF", i, err2)
		}
	}
}

// TestReadBlocks: a file read through the disk cache's blocks gives what
// it gives read from the source, for reads within a block, across blocks
// and at the end; each block is fetched once (as two copies).
func TestReadBlocks(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 2*store.BlockSize+12345)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := store.NewStore(store.Options{IndexDir: t.TempDir(), Disk: cachekit.Disk(t, t.TempDir(), 64<<20, nil, 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	src := &countingBackend{Backend: local.New(dir)}
	d := &Dataset{Source: src, src: st.Source(src)}
	obj, err := d.dataFile(context.Background(), "f")
	if err != nil {
		t.Fatal(err)
	}
	plain := &object{src: store.Direct(local.New(dir)), name: "f", size: obj.size}
	for i := range 500 {
		off := int64(rng.IntN(len(data) + 10))
		n := rng.IntN(3 * store.BlockSize / 2)
		if i%3 == 0 {
			n = rng.IntN(100) + 1
		}
		p1, p2 := make([]byte, n), make([]byte, n)
		n1, err1 := plain.readAt(context.Background(), p1, off)
		n2, err2 := obj.readAt(context.Background(), p2, off)
		if n1 != n2 || !bytes.Equal(p1[:n1], p2[:n2]) || (err1 == nil) != (err2 == nil) || (err1 == io.EOF) != (err2 == io.EOF) {
			t.Fatalf("read %d: %d bytes at %d: from the source %d, %v; by blocks %d, %v", i, n, off, n1, err1, n2, err2)
		}
	}
	// The counting source is not local files: each block is fetched as
	// two copies that must agree (diskcache.VerifyTwice).
	if got := src.opens.Load(); got != 6 {
		t.Errorf("%d reads reached the source; want 6, two copies of each block, once", got)
	}
	if again, _ := d.dataFile(context.Background(), "f"); again != obj {
		t.Error("a data file is identified again at each call")
	}
}

// countingBackend counts the reads that reach a backend.
type countingBackend struct {
	storage.Backend
	opens atomic.Int64
}

func (c *countingBackend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	c.opens.Add(1)
	return c.Backend.Open(ctx, name, off, length)
}
