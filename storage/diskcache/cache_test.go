package diskcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func testLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// fillWith returns a FillFunc that reserves len(data) and writes data.
func fillWith(data []byte, calls *atomic.Int64) FillFunc {
	return func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
		if calls != nil {
			calls.Add(1)
		}
		if err := reserve(int64(len(data))); err != nil {
			return err
		}
		_, err := w.Write(data)
		return err
	}
}

func cachedBytes(t *testing.T, dir string) (total int64, n int) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(dir, "files"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) == ".lock" {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total, n
}

func readEntry(t *testing.T, e *Entry) []byte {
	t.Helper()
	b, err := io.ReadAll(io.NewSectionReader(e, 0, e.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDiskCacheEvictionKeepsBound(t *testing.T) {
	dir := t.TempDir()
	const budget = 10 << 10
	c, err := Open(dir, budget, testLog(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	objects := map[string][]byte{}
	for i := range 30 {
		key := fmt.Sprintf("ds/shard-%02d", i)
		data := make([]byte, 1<<10+rng.IntN(2<<10))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		objects[key] = data
		e, err := c.Open(ctx, ctx, key, fillWith(data, nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := readEntry(t, e); !bytes.Equal(got, data) {
			t.Fatalf("%s: read back %d bytes that differ from the %d written", key, len(got), len(data))
		}
		e.Close()
		// Keep shard-00 hot: it must survive while colder ones go.
		if i > 0 {
			e0, err := c.Open(ctx, ctx, "ds/shard-00", fillWith(objects["ds/shard-00"], nil))
			if err != nil {
				t.Fatal(err)
			}
			e0.Close()
		}
		if total, _ := cachedBytes(t, dir); total > budget {
			t.Fatalf("after %s the cache holds %d bytes, budget %d", key, total, budget)
		}
	}
	if c.Stats.Evictions.Load() == 0 {
		t.Fatal("no evictions although 30 objects of 1-3 KiB passed through a 10 KiB cache")
	}
	if !c.Contains("ds/shard-00") {
		t.Fatal("the most recently used object was evicted")
	}
	if c.Contains("ds/shard-01") {
		t.Fatal("the least recently used object survived")
	}
}

func TestDiskCacheRefusesObjectLargerThanBudget(t *testing.T) {
	c, err := Open(t.TempDir(), 100, testLog(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = c.Open(ctx, ctx, "big", fillWith(make([]byte, 101), nil))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("--disk")) {
		t.Fatalf("got %v, want an error naming the --disk budget", err)
	}
	if c.Contains("big") {
		t.Fatal("refused object is visible")
	}
}

func TestDiskCachePinnedEntriesAreKept(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, 3<<10, testLog(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pinned, err := c.Open(ctx, ctx, "a", fillWith(bytes.Repeat([]byte{1}, 2<<10), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Close()
	e, err := c.Open(ctx, ctx, "b", fillWith(bytes.Repeat([]byte{2}, 2<<10), nil))
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if !c.Contains("a") {
		t.Fatal("an entry open in this process was evicted")
	}
}

func TestDiskCacheFailedFillLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, 1<<20, testLog(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	boom := errors.New("connection reset")
	_, err = c.Open(ctx, ctx, "ds/s0", func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
		if _, err := w.Write(make([]byte, 4096)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the fill's error", err)
	}
	if c.Contains("ds/s0") {
		t.Fatal("a failed fill left a visible object")
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(ents) != 0 {
		t.Fatalf("a failed fill left %d temp files", len(ents))
	}
	// The next Open fills again and succeeds.
	e, err := c.Open(ctx, ctx, "ds/s0", fillWith([]byte("ok"), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := readEntry(t, e); string(got) != "ok" {
		t.Fatalf("got %q", got)
	}
}

// TestDiskCacheKilledDownload kills a real process in the middle of a fill
// and checks that nothing partial is visible and that the next cache open
// removes the dead writer's temp file.
func TestDiskCacheKilledDownload(t *testing.T) {
	if os.Getenv("OXEFS_TEST_KILLED_FILL") != "" {
		killedFillChild()
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskCacheKilledDownload$")
	cmd.Env = append(os.Environ(), "OXEFS_TEST_KILLED_FILL="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The child prints one line once it has written half the object.
	line := make([]byte, 8)
	if _, err := io.ReadFull(stdout, line); err != nil || string(line) != "written\n" {
		cmd.Process.Kill()
		t.Fatalf("child did not start its fill: %q %v", line, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	if ents, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(ents) != 1 {
		t.Fatalf("expected the killed writer's temp file, found %d", len(ents))
	}
	c, err := Open(dir, 1<<20, testLog(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Contains("ds/shard") {
		t.Fatal("a killed download is visible as a cached object")
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(ents) != 0 {
		t.Fatalf("stale temp file not cleaned: %d left", len(ents))
	}
	ctx := context.Background()
	e, err := c.Open(ctx, ctx, "ds/shard", fillWith([]byte("complete"), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := readEntry(t, e); string(got) != "complete" {
		t.Fatalf("got %q", got)
	}
}

func killedFillChild() {
	c, err := Open(os.Getenv("OXEFS_TEST_KILLED_FILL"), 1<<20, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	c.Open(ctx, ctx, "ds/shard", func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
		w.Write(make([]byte, 1000))
		os.Stdout.WriteString("written\n")
		select {} // hang until killed
	})
}

// TestDiskCacheSharedDirectory runs two caches over one directory, as two
// daemons would: each key is filled exactly once and every reader sees the
// complete object.
func TestDiskCacheSharedDirectory(t *testing.T) {
	dir := t.TempDir()
	var caches [2]*Cache
	for i := range caches {
		c, err := Open(dir, 1<<20, testLog(t), 0)
		if err != nil {
			t.Fatal(err)
		}
		caches[i] = c
	}
	const keys = 8
	var fills [keys]atomic.Int64
	release := make(chan struct{})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for r := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := caches[r%2]
			for k := range keys {
				key := fmt.Sprintf("ds/shard-%d", k)
				want := bytes.Repeat([]byte{byte(k)}, 10<<10)
				e, err := c.Open(ctx, ctx, key, func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
					fills[k].Add(1)
					<-release // keep the fill in flight while the others arrive
					for i := 0; i < len(want); i += 1000 {
						if _, err := w.Write(want[i:min(i+1000, len(want))]); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(io.NewSectionReader(e, 0, e.Size()))
				e.Close()
				if err != nil || !bytes.Equal(got, want) {
					errs <- fmt.Errorf("%s: read %d bytes, err %v", key, len(got), err)
					return
				}
			}
		}()
	}
	time.AfterFunc(50*time.Millisecond, func() { close(release) })
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for k := range fills {
		if n := fills[k].Load(); n != 1 {
			t.Errorf("key %d filled %d times, want exactly 1", k, n)
		}
	}
}

func TestDiskCacheOpenCancelledWaiter(t *testing.T) {
	c, err := Open(t.TempDir(), 1<<20, testLog(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err = c.Open(ctx, context.Background(), "k", func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
		close(started)
		<-release
		_, err := w.Write([]byte("shared"))
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled for the waiter who gave up", err)
	}
	// The fill runs on under the shared context; a later reader gets it.
	close(release)
	bg := context.Background()
	e, err := c.Open(bg, bg, "k", func(context.Context, io.Writer, func(int64) error) error {
		return errors.New("should not fill twice")
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := readEntry(t, e); string(got) != "shared" {
		t.Fatalf("got %q", got)
	}
}

// chunkFill writes n chunks, reporting each one written on wrote; it starts
// only once start is closed.
func chunkFill(start <-chan struct{}, n int, wrote chan<- int) FillFunc {
	return func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
		<-start
		for i := range n {
			if _, err := w.Write(make([]byte, 1024)); err != nil {
				return err
			}
			wrote <- i
		}
		return nil
	}
}

// TestBackgroundFillYieldsToDemand: while a reader waits on one fill, a
// prefetch fill makes no progress; it resumes once the reader is served, and
// a reader waiting on the prefetch fill itself stops it yielding.
func TestBackgroundFillYieldsToDemand(t *testing.T) {
	c, err := Open(t.TempDir(), 1<<20, testLog(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	var wg sync.WaitGroup
	defer wg.Wait()
	open := func(key string, background bool, fn FillFunc) <-chan error {
		done := make(chan error, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := c.Open
			if background {
				o = c.OpenBackground
			}
			e, err := o(bg, bg, key, fn)
			if err == nil {
				e.Close()
			}
			done <- err
		}()
		return done
	}
	// releaseAll frees held fills even when the test fails early, so that
	// the deferred wait returns.
	var releases []chan struct{}
	var once sync.Once
	releaseAll := func() {
		once.Do(func() {
			for _, r := range releases {
				select {
				case <-r:
				default:
					close(r)
				}
			}
		})
	}
	defer releaseAll()
	// held is a fill that signals it started and waits for release.
	held := func(started, release chan struct{}) FillFunc {
		releases = append(releases, release)
		return func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
			close(started)
			<-release
			_, err := w.Write([]byte("needed now"))
			return err
		}
	}

	// A reader waits on a held download; a prefetch then gets nowhere.
	started, release := make(chan struct{}), make(chan struct{})
	demanded := open("ds/demanded", false, held(started, release))
	<-started // the reader's demand is registered before its fill starts
	start, wrote := make(chan struct{}), make(chan int, 100)
	prefetched := open("ds/prefetch", true, chunkFill(start, 50, wrote))
	close(start)
	select {
	case i := <-wrote:
		t.Fatalf("the prefetch wrote chunk %d while a reader waited on another download", i)
	case <-time.After(300 * time.Millisecond):
	}
	release <- struct{}{}
	if err := <-demanded; err != nil {
		t.Fatal(err)
	}
	if err := <-prefetched; err != nil {
		t.Fatalf("the prefetch did not resume: %v", err)
	}
	if got := len(wrote); got != 50 {
		t.Fatalf("prefetch wrote %d chunks, want 50", got)
	}

	// While another reader waits, a prefetch that a reader joins goes on.
	started2, release2 := make(chan struct{}), make(chan struct{})
	other := open("ds/other", false, held(started2, release2))
	<-started2
	start2, wrote2 := make(chan struct{}), make(chan int, 100)
	open("ds/joined", true, chunkFill(start2, 20, wrote2))
	joined := open("ds/joined", false, chunkFill(start2, 20, wrote2))
	close(start2)
	select {
	case err := <-joined:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a prefetch fill that a reader waits on still yielded")
	}
	release2 <- struct{}{}
	if err := <-other; err != nil {
		t.Fatal(err)
	}
}
