package diskcache

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// smallFS mounts a tmpfs of size bytes (as root) for the test, or skips
// loudly.
func smallFS(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("SKIPPED: %s needs to mount a %s tmpfs (root): %v %s", t.Name(), size, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// logBuffer is a slog handler target that tests can read.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDiskCacheBudgetAboveFreeSpace: --disk 1GiB on a 20 MiB filesystem is
// lowered to what fits, with a warning; objects then cycle through the
// cache without a failed write.
func TestDiskCacheBudgetAboveFreeSpace(t *testing.T) {
	fsDir := smallFS(t, "20m")
	var logs logBuffer
	c, err := Open(filepath.Join(fsDir, "cache"), 1<<30, slog.New(slog.NewTextHandler(&logs, nil)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if b := c.Budget(); b > 20<<20 || b < 15<<20 {
		t.Fatalf("budget %d on a 20 MiB filesystem, want it lowered to the free space", b)
	}
	if !strings.Contains(logs.String(), "--disk is larger than the cache filesystem") {
		t.Fatalf("no warning:\n%s", logs.String())
	}
	ctx := context.Background()
	for i := range 12 {
		data := bytes.Repeat([]byte{byte(i)}, 4<<20)
		e, err := c.Open(ctx, ctx, "ds/shard-"+string(rune('a'+i)), fillWith(data, nil))
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		e.Close()
	}
}

// TestDiskCacheNoSpaceEvictsAndRetries: when other files fill the
// filesystem under the budget, a fill that meets ENOSPC evicts cached
// files and writes again; an object that cannot fit even then fails with
// an error naming it and the sizes.
func TestDiskCacheNoSpaceEvictsAndRetries(t *testing.T) {
	fsDir := smallFS(t, "20m")
	c, err := Open(filepath.Join(fsDir, "cache"), 1<<30, testLog(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Something else takes 10 MiB after the budget was set.
	if err := os.WriteFile(filepath.Join(fsDir, "other"), make([]byte, 10<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 6 {
		data := bytes.Repeat([]byte{byte(i)}, 3<<20)
		key := "ds/shard-" + string(rune('a'+i))
		e, err := c.Open(ctx, ctx, key, fillWith(data, nil))
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		if got := readEntry(t, e); !bytes.Equal(got, data) {
			t.Fatalf("object %d read back wrong", i)
		}
		e.Close()
	}
	if c.Stats.Evictions.Load() == 0 {
		t.Fatal("no eviction although the filesystem filled up")
	}
	_, err = c.Open(ctx, ctx, "ds/huge", fillWith(make([]byte, 12<<20), nil))
	if err == nil || !strings.Contains(err.Error(), "ds/huge") || !strings.Contains(err.Error(), "12582912 bytes") ||
		!strings.Contains(err.Error(), "free") {
		t.Fatalf("got %v, want an error naming the object, its size and the free space", err)
	}
	if testing.Verbose() {
		t.Log(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(fsDir, "cache", "tmp")); len(ents) != 0 {
		t.Fatalf("%d temp files left", len(ents))
	}
}
