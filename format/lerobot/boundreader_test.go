package lerobot

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/oxefs/oxefs/storage/local"
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
	d := &Dataset{Source: local.New(dir)}
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
