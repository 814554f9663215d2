package view

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestBatchCacheServes: a batch described once is answered again without
// reading the mount (its arrays gone, the answer is the same), and a
// mount whose info.json changed is read anew.
func TestBatchCacheServes(t *testing.T) {
	dir := stepMount(t)
	srv := newTestServer(t, dir)
	code, first := get(t, srv.URL+"/api/batch?n=0")
	if code != 200 {
		t.Fatalf("status %d: %s", code, first)
	}
	if err := os.Remove(filepath.Join(dir, "batches", "000000.action.npy")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		change    func(t *testing.T)
		wantCode  int
		wantSame  bool
		wantQuery string
	}{
		{"the same batch again", func(*testing.T) {}, 200, true, "/api/batch?n=0"},
		{"the same batch, rank and view named", func(*testing.T) {}, 200, true, "/api/batch?n=0&view=train&rank=0"},
		{"info.json changed", func(t *testing.T) {
			p := filepath.Join(dir, "info.json")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 404, false, "/api/batch?n=0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.change(t)
			code, body := get(t, srv.URL+tc.wantQuery)
			if code != tc.wantCode || bytes.Equal(body, first) != tc.wantSame {
				t.Errorf("status %d, same answer %v; want %d, %v: %s", code, bytes.Equal(body, first), tc.wantCode, tc.wantSame, body)
			}
		})
	}
}

// TestBatchCacheEvicts keeps the last batchCacheSize batches used.
func TestBatchCacheEvicts(t *testing.T) {
	c := newBatchCache()
	key := func(n int64) batchKey { return batchKey{view: "train", n: n} }
	for n := range int64(batchCacheSize) {
		c.put(key(n), json.RawMessage(`{}`))
	}
	c.get(key(0)) // 0 is now the most recently used: 1 goes next
	c.put(key(batchCacheSize), json.RawMessage(`{}`))
	for n := range int64(batchCacheSize + 1) {
		if got, want := c.get(key(n)) != nil, n != 1; got != want {
			t.Errorf("batch %d kept %v, want %v", n, got, want)
		}
	}
}
