package diskcache

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/retry"
)

// testSlicing slices objects of 1 MiB and more into 256 KiB slices, four
// at once.
var testSlicing = slicing{min: 1 << 20, size: 256 << 10, inFlight: 4}

// bigObject is the size of the sliced test object: nine slices, the last
// one short.
const bigObject = 2<<20 + 12345

// slicedCache opens a cache under dir that slices as testSlicing says, and
// wraps a gcs backend reached through proxy (nil: the fake server itself),
// itself wrapped in retries when retrying.
func slicedCache(t *testing.T, dir string, srv *fakestorage.Server, proxy *testkit.FaultProxy, retrying bool, fillCtx context.Context) (*Cache, *Backend) {
	t.Helper()
	c, err := Open(dir, 1<<30, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		t.Fatal(err)
	}
	c.slicing = testSlicing
	url := srv.URL()
	if proxy != nil {
		url = proxy.URL()
	}
	var b storage.Backend = gcs.NewWithClient(testkit.NewGCSClient(t, url), testkit.GCSBucket, testkit.GCSPrefix)
	if retrying {
		b = retry.New(b, retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
			MaxElapsed: 10 * time.Second, StallTimeout: 10 * time.Second}, nil, nil)
	}
	return c, c.Wrap(b, "gs", fillCtx)
}

// rangedGets returns the Range headers of the proxy's object reads that
// asked for a range.
func rangedGets(p *testkit.FaultProxy, name string) []string {
	var ranges []string
	for _, r := range p.Requests() {
		if r.Method == "GET" && strings.HasSuffix(r.Path, "/"+name) && r.Range != "" {
			ranges = append(ranges, r.Range)
		}
	}
	return ranges
}

func readAll(t *testing.T, f storage.File) []byte {
	t.Helper()
	got := make([]byte, f.Size())
	if _, err := f.ReadAt(got, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return got
}

// tempFiles lists the cache's temp files.
func tempFiles(t *testing.T, c *Cache) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(c.Dir(), "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestSlicedFillIsWholeAndRanged(t *testing.T) {
	big, small := testkit.RandomBytes(t, bigObject), testkit.RandomBytes(t, 1<<20-1)
	srv := testkit.StartFakeGCS(t, map[string][]byte{"big": big, "small": small})
	proxy := testkit.NewFaultProxy(t, srv.URL(), func(int) testkit.Fault { return testkit.Pass() })
	c, b := slicedCache(t, t.TempDir(), srv, proxy, true, context.Background())

	f, err := b.OpenFile(t.Context(), "big")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !bytes.Equal(readAll(t, f), big) {
		t.Fatal("the sliced fill's bytes differ from the object's")
	}
	ranges := rangedGets(proxy, "big")
	if len(ranges) != 9 {
		t.Fatalf("the fill read %d ranges %q, want the object's 9 slices", len(ranges), ranges)
	}
	for i := range 9 {
		off := int64(i) * testSlicing.size
		want := fmt.Sprintf("bytes=%d-%d", off, min(off+testSlicing.size, bigObject)-1)
		if !strings.Contains(strings.Join(ranges, " "), want) {
			t.Errorf("no request for slice %d (%s) among %q", i, want, ranges)
		}
	}
	if got := c.Stats.BytesWritten.Load(); got != bigObject {
		t.Errorf("BytesWritten = %d, want %d", got, bigObject)
	}

	// An object under the threshold is read in one stream.
	g, err := b.OpenFile(t.Context(), "small")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if !bytes.Equal(readAll(t, g), small) {
		t.Fatal("the small object's bytes differ")
	}
	if r := rangedGets(proxy, "small"); len(r) != 0 {
		t.Errorf("the small object was read in ranges %q, want one stream", r)
	}
	if tmp := tempFiles(t, c); len(tmp) != 0 {
		t.Errorf("temp files left: %q", tmp)
	}
}

func TestSlicedFillResumesADroppedSlice(t *testing.T) {
	big := testkit.RandomBytes(t, bigObject)
	srv := testkit.StartFakeGCS(t, map[string][]byte{"big": big})
	dropAt := 3 * testSlicing.size
	proxy := testkit.NewOffsetFaultProxy(t, srv.URL(), func(off int64, nth int) testkit.Fault {
		if off == dropAt && nth == 0 {
			return testkit.DropAfter(1000)
		}
		return testkit.Pass()
	})
	_, b := slicedCache(t, t.TempDir(), srv, proxy, true, context.Background())
	f, err := b.OpenFile(t.Context(), "big")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !bytes.Equal(readAll(t, f), big) {
		t.Fatal("the bytes differ after a dropped slice")
	}
	resumed := fmt.Sprintf("bytes=%d-%d", dropAt+1000, dropAt+testSlicing.size-1)
	if r := rangedGets(proxy, "big"); !strings.Contains(strings.Join(r, " "), resumed) {
		t.Fatalf("the dropped slice was not resumed at its byte 1000 (%s): ranges %q", resumed, r)
	}
}

func TestSlicedFillDetectsAChangedObject(t *testing.T) {
	big := testkit.RandomBytes(t, bigObject)
	srv := testkit.StartFakeGCS(t, map[string][]byte{"big": big})
	last := 8 * testSlicing.size
	var once sync.Once
	proxy := testkit.NewOffsetFaultProxy(t, srv.URL(), func(off int64, nth int) testkit.Fault {
		if off == last {
			// The object is rewritten, same size, before its last slice.
			once.Do(func() {
				srv.CreateObject(fakestorage.Object{
					ObjectAttrs: fakestorage.ObjectAttrs{BucketName: testkit.GCSBucket, Name: testkit.GCSPrefix + "/big"},
					Content:     testkit.RandomBytes(t, bigObject),
				})
			})
		}
		return testkit.Pass()
	})
	c, b := slicedCache(t, t.TempDir(), srv, proxy, true, context.Background())
	f, err := b.OpenFile(t.Context(), "big")
	if err == nil {
		f.Close()
		t.Fatal("a fill of an object rewritten during its download succeeded")
	}
	if !strings.Contains(err.Error(), "changed during its download") {
		t.Fatalf("error %q does not say the object changed", err)
	}
	if b.Contains("big") {
		t.Error("the mixed bytes were published in the cache")
	}
	if tmp := tempFiles(t, c); len(tmp) != 0 {
		t.Errorf("temp files left: %q", tmp)
	}
}

// hangingSlices starts a fake server holding a random object "big" behind
// a proxy on which the read of its third slice hangs.
func hangingSlices(t *testing.T) ([]byte, *fakestorage.Server, *testkit.FaultProxy) {
	big := testkit.RandomBytes(t, bigObject)
	srv := testkit.StartFakeGCS(t, map[string][]byte{"big": big})
	proxy := testkit.NewOffsetFaultProxy(t, srv.URL(), func(off int64, _ int) testkit.Fault {
		if off == 2*testSlicing.size {
			return testkit.HangAtOnce()
		}
		return testkit.Pass()
	})
	return big, srv, proxy
}

// waitFilling waits until b's fill of "big" has its first slice written,
// and returns that slice as ReadFilling reads it.
func waitFilling(t *testing.T, b *Backend) []byte {
	t.Helper()
	p := make([]byte, testSlicing.size)
	timeout := time.After(10 * time.Second)
	for {
		progress := b.FillProgress()
		ok, _, err := b.readFilling(t.Context(), "big", p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return p
		}
		select {
		case <-progress:
		case <-timeout:
			t.Fatal("the first slice was never readable from the fill")
		}
	}
}

func TestReadFillingReadsWrittenRangesOnly(t *testing.T) {
	big, srv, proxy := hangingSlices(t)
	fillCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, b := slicedCache(t, t.TempDir(), srv, proxy, false, fillCtx)

	p := make([]byte, 100)
	if ok, _, err := b.readFilling(t.Context(), "big", p, 0); ok || err != nil {
		t.Fatalf("ReadFilling with no fill running = %v, %v; want false, nil", ok, err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := b.OpenFileBackground(t.Context(), "big")
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	if got := waitFilling(t, b); !bytes.Equal(got, big[:testSlicing.size]) {
		t.Fatal("ReadFilling returned other bytes than the object's first slice")
	}
	tail := make([]byte, 10)
	if ok, _, err := b.readFilling(t.Context(), "big", tail, testSlicing.size-5); err != nil {
		t.Fatal(err)
	} else if ok && !bytes.Equal(tail, big[testSlicing.size-5:testSlicing.size+5]) {
		t.Fatal("ReadFilling across slices 0 and 1 returned other bytes")
	}
	// A range is readable exactly when every byte of it is written. The
	// hanging slice's bytes never are, so a range touching it never is; a
	// range past it lies in a slice that its own request may or may not
	// have finished, so it may be readable, and then holds the object's bytes.
	for _, off := range []int64{2 * testSlicing.size, 2*testSlicing.size - 5, 3*testSlicing.size - 5} {
		if ok, _, err := b.readFilling(t.Context(), "big", tail, off); ok || err != nil {
			t.Errorf("ReadFilling at %d, touching the hanging slice = %v, %v; want false, nil", off, ok, err)
		}
	}
	if ok, _, err := b.readFilling(t.Context(), "big", tail, bigObject-10); err != nil {
		t.Fatal(err)
	} else if ok && !bytes.Equal(tail, big[bigObject-10:]) {
		t.Error("ReadFilling past the hanging slice returned other bytes than the object's")
	}
	if ok, _, _ := b.readFilling(t.Context(), "other", tail, 0); ok {
		t.Error("ReadFilling of an object with no fill reported ok")
	}
	if b.Contains("big") {
		t.Fatal("the object is in the cache while its fill hangs")
	}

	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the cancelled fill succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled fill did not return")
	}
	if ok, _, _ := b.readFilling(t.Context(), "big", p, 0); ok {
		t.Error("ReadFilling reported ok after the fill ended")
	}
	if b.Contains("big") {
		t.Error("a cancelled fill was published")
	}
	if tmp := tempFiles(t, c); len(tmp) != 0 {
		t.Errorf("temp files left: %q", tmp)
	}
}

// killChildEnv names the cache directory of the child process of
// TestSlicedFillKilled.
const killChildEnv = "OXEFS_TEST_SLICED_FILL_DIR"

// TestSlicedFillKilled kills (SIGKILL) a process in the middle of a sliced
// fill: nothing of it shows in the cache, and the next process to open the
// cache removes its temp file.
func TestSlicedFillKilled(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		_, srv, proxy := hangingSlices(t)
		_, b := slicedCache(t, dir, srv, proxy, false, context.Background())
		go b.OpenFile(context.Background(), "big")
		waitFilling(t, b)
		fmt.Println("filling")
		select {} // until killed
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSlicedFillKilled$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	lines := bufio.NewScanner(out)
	for lines.Scan() && lines.Text() != "filling" {
	}
	if lines.Err() != nil || lines.Text() != "filling" {
		t.Fatalf("the child never reported its fill under way: %v", lines.Err())
	}
	ents, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("want the fill's one temp file in the child's cache, got %v, %v", ents, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	c, err := Open(dir, 1<<30, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Contains("gs/big") {
		t.Error("a killed sliced fill left the object in the cache")
	}
	if tmp := tempFiles(t, c); len(tmp) != 0 {
		t.Errorf("the killed fill's temp file was not removed: %q", tmp)
	}
	files, total, err := c.scan()
	if err != nil || len(files) != 0 || total != 0 {
		t.Errorf("the cache holds %v (%d bytes, %v), want nothing", files, total, err)
	}
}

// TestSlicedPrefetchYieldsToDemand: while a reader waits on another fill, a
// prefetch in slices writes nothing and lets go of its key's lock; it
// completes once the reader is served.
func TestSlicedPrefetchYieldsToDemand(t *testing.T) {
	big := testkit.RandomBytes(t, bigObject)
	srv := testkit.StartFakeGCS(t, map[string][]byte{"big": big})
	c, b := slicedCache(t, t.TempDir(), srv, nil, false, context.Background())
	bg := context.Background()

	started, release := make(chan struct{}), make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	demanded := make(chan error, 1)
	go func() {
		e, err := c.Open(bg, bg, "held", func(ctx context.Context, w io.Writer, _ func(int64) error) error {
			close(started)
			<-release
			_, err := w.Write([]byte("needed now"))
			return err
		})
		if err == nil {
			e.Close()
		}
		demanded <- err
	}()
	<-started
	prefetched := make(chan error, 1)
	go func() {
		f, err := b.OpenFileBackground(bg, "big")
		if err == nil {
			if !bytes.Equal(readAll(t, f), big) {
				err = fmt.Errorf("the prefetched bytes differ")
			}
			f.Close()
		}
		prefetched <- err
	}()

	// The prefetch gets its temp file, then pauses before its first write.
	timeout := time.After(10 * time.Second)
	for {
		progress := c.FillProgress()
		c.mu.Lock()
		var s *sink
		if f := c.fills["gs/big"]; f != nil {
			s = f.sink
		}
		c.mu.Unlock()
		if s != nil {
			break
		}
		select {
		case <-progress:
		case <-timeout:
			t.Fatal("the prefetch never started")
		}
	}
	select {
	case <-c.FillProgress():
		t.Fatal("the prefetch wrote while a reader waited on another fill")
	case <-time.After(300 * time.Millisecond):
	}
	// Its key's lock is free for another process meanwhile.
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	unlock, err := lockFile(ctx, c.path("gs/big")+".lock")
	cancel()
	if err != nil {
		t.Fatalf("the paused prefetch holds its key's lock: %v", err)
	}
	unlock()

	close(release)
	if err := <-demanded; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-prefetched:
		if err != nil {
			t.Fatalf("the prefetch did not resume: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the prefetch did not resume")
	}
}

// TestSlicedFillNoSpaceEvictsAndRetries: a fill in slices that meets a
// full filesystem evicts and downloads again, as a one-stream fill does.
func TestSlicedFillNoSpaceEvictsAndRetries(t *testing.T) {
	fsDir := smallFS(t, "20m")
	c, err := Open(filepath.Join(fsDir, "cache"), 1<<30, testLog(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	c.slicing = testSlicing
	src, put := testkit.LocalBackend(t)
	big := testkit.RandomBytes(t, 5<<20)
	put(t, "big", big)
	counted := &rangedOpens{Backend: src}
	b := c.Wrap(counted, "local", context.Background())
	ctx := context.Background()
	for i := range 2 {
		e, err := c.Open(ctx, ctx, fmt.Sprintf("ds/old-%d", i), fillWith(bytes.Repeat([]byte{byte(i)}, 3<<20), nil))
		if err != nil {
			t.Fatal(err)
		}
		e.Close()
	}
	// Something else takes 10 MiB after the budget was set: 4 MiB are left.
	if err := os.WriteFile(filepath.Join(fsDir, "other"), make([]byte, 10<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := b.OpenFile(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !bytes.Equal(readAll(t, f), big) {
		t.Fatal("the sliced fill's bytes differ after a full filesystem")
	}
	if c.Stats.Evictions.Load() == 0 {
		t.Fatal("no eviction although the filesystem filled up")
	}
	if n := counted.n.Load(); n <= 20 {
		t.Errorf("%d ranged reads, want the 20 slices and the ones written again after the full filesystem", n)
	}
	if tmp := tempFiles(t, c); len(tmp) != 0 {
		t.Errorf("temp files left: %q", tmp)
	}
}

// rangedOpens counts the reads of part of an object.
type rangedOpens struct {
	storage.Backend
	n atomic.Int64
}

func (b *rangedOpens) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if length >= 0 {
		b.n.Add(1)
	}
	return b.Backend.Open(ctx, name, off, length)
}
