package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/storage/offline"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := NewStore(Options{IndexDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestDerivedKeyedOnIdentity: a derived file is served for the key and
// identity it was saved for, and for nothing else.
func TestDerivedKeyedOnIdentity(t *testing.T) {
	s := newStore(t)
	src := local.New(t.TempDir())
	id := "v1"
	identify := func() (string, error) { return id, nil }
	if _, err := s.LoadDerived(src, "stats", "k", identify); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("nothing saved: %v, want fs.ErrNotExist", err)
	}
	if err := s.SaveDerived(src, "stats", "v1", "k", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if b, err := s.LoadDerived(src, "stats", "k", identify); err != nil || string(b) != `{"a":1}` {
		t.Fatalf("saved for this key and identity: %s, %v", b, err)
	}
	if _, err := s.LoadDerived(src, "stats", "other", identify); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("another key: %v, want fs.ErrNotExist", err)
	}
	id = "v2"
	if _, err := s.LoadDerived(src, "stats", "k", identify); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("other bytes: %v, want fs.ErrNotExist", err)
	}
	if err := s.SaveDerived(src, "stats", "v2", "k", []byte("not json")); err == nil {
		t.Fatal("SaveDerived took data that is not JSON")
	}
}

// TestOfflineRecord: a record's files are saved in the source's index
// directory; a missing one is a *offline.NotCachedError naming it, and a
// source of local files needs none.
func TestOfflineRecord(t *testing.T) {
	s := newStore(t)
	src := remoteOnly{local.New(t.TempDir())}
	if got := s.MissingRecord(src, "a.json", "b.json"); !slices.Equal(got, []string{"a.json", "b.json"}) {
		t.Fatalf("MissingRecord before a save: %v", got)
	}
	if err := s.SaveRecord(src, File{Name: "a.json", Data: []byte("A")}); err != nil {
		t.Fatal(err)
	}
	if got := s.MissingRecord(src, "a.json", "b.json"); !slices.Equal(got, []string{"b.json"}) {
		t.Fatalf("MissingRecord after saving a.json: %v", got)
	}
	if b, err := s.ReadRecord(src, "a.json"); err != nil || string(b) != "A" {
		t.Fatalf("ReadRecord: %q, %v", b, err)
	}
	var nc *offline.NotCachedError
	if _, err := s.ReadRecord(src, "b.json"); !errors.As(err, &nc) || nc.Name != "b.json" {
		t.Fatalf("ReadRecord of a missing file: %v, want a *offline.NotCachedError naming it", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(src), "a.json")); err != nil {
		t.Fatalf("the record is not in the source's index directory: %v", err)
	}
	if got := s.MissingRecord(local.New(t.TempDir()), "a.json"); got != nil {
		t.Fatalf("a source of local files: MissingRecord %v, want none", got)
	}
}

// remoteOnly hides that a backend's objects are local files.
type remoteOnly struct{ storage.Backend }

// TestSourceReadsInPlace: a source of local files is read in place, by
// ranges and whole, and a store without a disk cache reads a remote one
// from the source, pinned to its version.
func TestSourceReadsInPlace(t *testing.T) {
	dir := t.TempDir()
	data := []byte("0123456789")
	if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	ctx := context.Background()
	for _, src := range []*Source{s.Source(local.New(dir)), s.Source(remoteOnly{local.New(dir)}), Direct(local.New(dir))} {
		if src.Cached() {
			t.Fatal("a source is read through a disk cache the store does not have")
		}
		info, err := src.Stat(ctx, "f")
		if err != nil {
			t.Fatal(err)
		}
		o := Object{Name: "f", Size: info.Size, Version: info.Version}
		p := make([]byte, 4)
		if _, err := src.ReadAt(ctx, o, p, 3, ReadOptions{Keep: KeepRange}); err != nil || !bytes.Equal(p, data[3:7]) {
			t.Fatalf("ReadAt: %q, %v", p, err)
		}
		f, err := src.OpenAt(ctx, o, 5, 5, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(io.NewSectionReader(f, 0, f.Size()))
		f.Close()
		if !bytes.Equal(got, data[5:]) {
			t.Fatalf("OpenAt: %q", got)
		}
		if _, err := src.ReadAt(ctx, o, make([]byte, 4), 8, ReadOptions{}); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("a read past the end: %v, want io.ErrUnexpectedEOF", err)
		}
	}
}

// TestBeginAfterClose: no shared work begins once the store is closing.
func TestBeginAfterClose(t *testing.T) {
	s, err := NewStore(Options{IndexDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	done, ok := s.Begin()
	if !ok {
		t.Fatal("Begin on an open store")
	}
	done()
	s.Close()
	if _, ok := s.Begin(); ok {
		t.Fatal("Begin after Close")
	}
	if s.Context().Err() == nil {
		t.Fatal("the store's context is not done after Close")
	}
}

// TestSaveRecordNamesTheFile: a file of an offline record that cannot be
// saved is an error naming it.
func TestSaveRecordNamesTheFile(t *testing.T) {
	s := newStore(t)
	src := remoteOnly{local.New(t.TempDir())}
	if err := os.MkdirAll(filepath.Dir(s.Dir(src)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Dir(src), nil, 0o644); err != nil { // no directory can be made there
		t.Fatal(err)
	}
	err := s.SaveRecord(src, File{Name: "shards.json", Data: []byte("{}")})
	if err == nil || !strings.Contains(err.Error(), "shards.json") {
		t.Fatalf("a record that cannot be saved: %v; want an error naming shards.json", err)
	}
}
