// Package storagetest is the conformance suite every storage backend and
// every decorator must pass: whole, offset and ranged reads, reads at and
// past the end, missing objects, Stat's size and version, cancellation and
// names with subdirectories. A backend's tests call Run with a constructor.
//
// It imports only package storage of oxefs.
package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/oxefs/oxefs/storage"
)

// Put stores data as the named object, replacing what was there.
type Put func(t *testing.T, name string, data []byte)

// notHung bounds how long the suite waits for a call that must return.
const notHung = 10 * time.Second

// Run runs the suite. newBackend returns a fresh, empty backend and the
// function that stores objects in it; objects are stored before the
// backend first reads them (a caching decorator may keep the first bytes
// it read).
func Run(t *testing.T, newBackend func(t *testing.T) (storage.Backend, Put)) {
	ctx := context.Background()
	data := randomBytes(3<<20 + 12345) // more than one copy buffer

	t.Run("ReadWhole", func(t *testing.T) {
		b, put := newBackend(t)
		put(t, "obj", data)
		if got := read(t, b, "obj", 0, -1); !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes, want the %d of the object", len(got), len(data))
		}
	})
	t.Run("ReadFromOffset", func(t *testing.T) {
		b, put := newBackend(t)
		put(t, "obj", data)
		for _, off := range []int64{1, 1 << 20, int64(len(data)) - 1} {
			if got := read(t, b, "obj", off, -1); !bytes.Equal(got, data[off:]) {
				t.Errorf("read from %d: %d bytes, want the %d from there", off, len(got), len(data)-int(off))
			}
		}
	})
	t.Run("RangedRead", func(t *testing.T) {
		b, put := newBackend(t)
		put(t, "obj", data)
		for _, r := range []struct{ off, length int64 }{{0, 1}, {10, 1000}, {1 << 20, 1 << 20}, {int64(len(data)) - 5, 5}, {int64(len(data)) - 5, 100}} {
			want := data[r.off:min(r.off+r.length, int64(len(data)))]
			if got := read(t, b, "obj", r.off, r.length); !bytes.Equal(got, want) {
				t.Errorf("read %d bytes from %d: got %d bytes, want %d", r.length, r.off, len(got), len(want))
			}
		}
	})
	t.Run("OffsetAtOrPastEnd", func(t *testing.T) {
		b, put := newBackend(t)
		put(t, "obj", data[:1000])
		for _, off := range []int64{1000, 5000} {
			if got := read(t, b, "obj", off, -1); len(got) != 0 {
				t.Errorf("read from %d of a 1000-byte object: %d bytes, want none", off, len(got))
			}
		}
	})
	t.Run("MissingObject", func(t *testing.T) {
		b, put := newBackend(t)
		put(t, "present", data[:10])
		if _, err := b.Stat(ctx, "absent"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat of a missing object: %v, want fs.ErrNotExist", err)
		}
		if err := readErr(ctx, b, "absent"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("read of a missing object: %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("StatSizeAndVersion", func(t *testing.T) {
		b, put := newBackend(t)
		put(t, "obj", data[:5000])
		info, err := b.Stat(ctx, "obj")
		if err != nil || info.Size != 5000 || info.Version == "" {
			t.Fatalf("Stat = %+v, %v; want size 5000 and a version", info, err)
		}
		again, err := b.Stat(ctx, "obj")
		if err != nil || again != info {
			t.Fatalf("Stat again = %+v, %v; want %+v: the bytes did not change", again, err, info)
		}
		other := bytes.Clone(data[:5000])
		other[0] ^= 0xff
		put(t, "obj", other)
		changed, err := b.Stat(ctx, "obj")
		if err != nil || changed.Size != 5000 || changed.Version == info.Version {
			t.Fatalf("Stat after new bytes = %+v, %v; want size 5000 and a version other than %q", changed, err, info.Version)
		}
	})
	t.Run("CancelledContextStopsRead", func(t *testing.T) {
		b, put := newBackend(t)
		put(t, "obj", data)
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		rc, err := b.Open(rctx, "obj", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		buf := make([]byte, 1000)
		if _, err := io.ReadFull(rc, buf); err != nil {
			t.Fatalf("first read: %v", err)
		}
		cancel()
		done := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, rc)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("the read went on to the end after its context was cancelled")
			}
		case <-time.After(notHung):
			t.Fatalf("read still running %v after its context was cancelled", notHung)
		}
	})
	t.Run("NamesWithSubdirectories", func(t *testing.T) {
		b, put := newBackend(t)
		put(t, "a/b/c.bin", data[:777])
		put(t, "a/d.bin", data[:3])
		if got := read(t, b, "a/b/c.bin", 0, -1); !bytes.Equal(got, data[:777]) {
			t.Errorf("a/b/c.bin: %d bytes, want 777", len(got))
		}
		if info, err := b.Stat(ctx, "a/d.bin"); err != nil || info.Size != 3 {
			t.Errorf("Stat(a/d.bin) = %+v, %v; want size 3", info, err)
		}
	})
	// Objects readable in place are checked for backends that offer them;
	// the others have no such subtest (not a skipped one).
	if probe, _ := newBackend(t); !storage.IsFiler(probe) {
		return
	}
	t.Run("Filer", func(t *testing.T) {
		b, put := newBackend(t)
		var fl storage.Filer
		if !storage.As(b, &fl) {
			t.Fatalf("%T is no storage.Filer, through its decorators", b)
		}
		put(t, "obj", data)
		f, err := fl.OpenFile(ctx, "obj")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if f.Size() != int64(len(data)) {
			t.Fatalf("Size() = %d, want %d", f.Size(), len(data))
		}
		got := make([]byte, 100)
		if _, err := f.ReadAt(got, 1<<20); err != nil || !bytes.Equal(got, data[1<<20:1<<20+100]) {
			t.Fatalf("ReadAt(100 bytes at 1 MiB): %v, or other bytes", err)
		}
		if _, err := fl.OpenFile(ctx, "absent"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("OpenFile of a missing object: %v, want fs.ErrNotExist", err)
		}
	})
}

// read reads length bytes of name from off (to the end when length < 0).
func read(t *testing.T, b storage.Backend, name string, off, length int64) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), notHung)
	defer cancel()
	rc, err := b.Open(ctx, name, off, length)
	if err != nil {
		t.Fatalf("Open(%q, %d, %d): %v", name, off, length, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %q from %d: %v", name, off, err)
	}
	return got
}

// readErr returns the error of opening or reading name, nil if none.
func readErr(ctx context.Context, b storage.Backend, name string) error {
	ctx, cancel := context.WithTimeout(ctx, notHung)
	defer cancel()
	rc, err := b.Open(ctx, name, 0, -1)
	if err != nil {
		return err
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	if err == nil {
		return fmt.Errorf("read %d bytes of a missing object", n)
	}
	return err
}

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
