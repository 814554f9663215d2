package fs

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestLooking: a batch read by a thread of the daemon's own process (its
// web page) is a look; one read by another process is a reader's.
func TestLooking(t *testing.T) {
	train := &fakeBatches{n: 4, frames: 64, meta: true}
	dir, _ := mountFake(t, train, nil)
	tests := []struct {
		name      string
		read      func(path string) error
		wantLooks int64
	}{
		{"this process", func(path string) error { _, err := os.ReadFile(path); return err }, 1},
		{"another process", func(path string) error { return exec.Command("cat", path).Run() }, 0},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gets, looks := train.gets.Load(), train.looks.Load()
			if err := tc.read(filepath.Join(dir, "batches", batchName(int64(i))+".npy")); err != nil {
				t.Fatal(err)
			}
			g, l := train.gets.Load()-gets, train.looks.Load()-looks
			if g == 0 || l != tc.wantLooks*g {
				t.Errorf("%d gets, %d of them looks; want every one a look: %v", g, l, tc.wantLooks == 1)
			}
		})
	}
}
