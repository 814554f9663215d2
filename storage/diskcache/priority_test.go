package diskcache

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestFillsYieldByPriority: a fill for batch 5 makes no progress while a
// reader of batch 0 waits on another fill, goes on beside a reader of its
// own priority, and goes on at once when a more urgent reader joins it.
func TestFillsYieldByPriority(t *testing.T) {
	c, err := Open(t.TempDir(), 1<<20, testLog(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	open := func(key string, prio int64, fn FillFunc) <-chan error {
		done := make(chan error, 1)
		ctx := WithPriority(context.Background(), prio)
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := c.Open(ctx, context.Background(), key, fn)
			if err == nil {
				e.Close()
			}
			done <- err
		}()
		return done
	}
	var releases []chan struct{}
	defer func() {
		for _, r := range releases {
			select {
			case <-r:
			default:
				close(r)
			}
		}
	}()
	held := func(started, release chan struct{}) FillFunc {
		releases = append(releases, release)
		return func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
			close(started)
			<-release
			_, err := w.Write([]byte("batch 0"))
			return err
		}
	}

	// Batch 0's reader waits on a held fill: batch 5's fill gets nowhere,
	// while a fill of batch 0's own priority goes on.
	started, release := make(chan struct{}), make(chan struct{})
	urgent := open("ds/batch0", 0, held(started, release))
	<-started
	start, wrote := make(chan struct{}), make(chan int, 100)
	later := open("ds/batch5", 5, chunkFill(start, 30, wrote))
	startPeer, wrotePeer := make(chan struct{}), make(chan int, 100)
	peer := open("ds/batch0-peer", 0, chunkFill(startPeer, 30, wrotePeer))
	close(start)
	close(startPeer)
	select {
	case err := <-peer:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a fill of the waiting reader's own priority paused")
	}
	select {
	case i := <-wrote:
		t.Fatalf("batch 5's fill wrote chunk %d while batch 0's reader waited", i)
	case <-time.After(300 * time.Millisecond):
	}

	// A reader of priority 0 joining batch 5's fill lifts it to 0.
	joined := open("ds/batch5", 0, chunkFill(start, 30, wrote))
	for _, done := range []<-chan error{joined, later} {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a fill that a priority-0 reader joined still paused")
		}
	}
	if got := len(wrote); got != 30 {
		t.Fatalf("batch 5's fill wrote %d chunks, want 30", got)
	}
	close(release)
	if err := <-urgent; err != nil {
		t.Fatal(err)
	}
}

// TestPausedSliceAbandonsItsRequest: a prefetch whose slice request is
// under way when a reader starts waiting abandons that request at once
// (here the request hangs, so only abandoning it frees it), opens nothing
// while the reader waits, and once the reader is done resumes the slice at
// the byte it had reached, through the real storage client.
func TestPausedSliceAbandonsItsRequest(t *testing.T) {
	big := testkit.RandomBytes(t, bigObject)
	srv := testkit.StartFakeGCS(t, map[string][]byte{"big": big})
	const hangAt, sent = 3 * 256 << 10, 1000
	proxy := testkit.NewOffsetFaultProxy(t, srv.URL(), func(off int64, nth int) testkit.Fault {
		if off == hangAt && nth == 0 {
			return testkit.HangAfter(sent)
		}
		return testkit.Pass()
	})
	// No retrying backend: nothing but the pause ends the hung request.
	c, b := slicedCache(t, t.TempDir(), srv, proxy, false, context.Background())

	prefetched := make(chan error, 1)
	go func() {
		f, err := b.OpenFileBackground(context.Background(), "big")
		if err == nil {
			if !bytes.Equal(readAll(t, f), big) {
				err = fmt.Errorf("the prefetched bytes differ from the object")
			}
			f.Close()
		}
		prefetched <- err
	}()
	select {
	case <-proxy.Hung:
	case <-time.After(10 * time.Second):
		t.Fatal("the slice at the hanging offset was never requested")
	}
	// Give the hung request time to deliver its bytes before the pause.
	testkit.WaitFor(t, 10*time.Second, time.Millisecond, "the hung slice's first bytes in the fill", func() bool {
		ok, _, _ := c.ReadFilling("gs/big", make([]byte, sent), hangAt)
		return ok
	})
	done := c.Demand(WithPriority(context.Background(), 0))
	time.Sleep(300 * time.Millisecond) // requests that would start during the pause show now
	before := len(proxy.Requests())
	done()

	select {
	case err := <-prefetched:
		if err != nil {
			t.Fatalf("the prefetch did not resume: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the prefetch never completed: its hung request was not abandoned")
	}
	resume := fmt.Sprintf("bytes=%d-", hangAt+sent)
	found := -1
	for i, r := range proxy.Requests() {
		if r.Method == "GET" && strings.HasPrefix(r.Range, resume) {
			found = i
		}
	}
	if found < 0 {
		t.Fatalf("no request resumed the slice at byte %d; ranged reads: %q", hangAt+sent, rangedGets(proxy, "big"))
	}
	if found < before {
		t.Errorf("the slice was resumed (request %d) while the reader still waited (first %d requests)", found, before)
	}
}

// TestWaitOutlastsFills: Wait returns only once the fills running here have
// ended, temp files removed.
func TestWaitOutlastsFills(t *testing.T) {
	c, err := Open(t.TempDir(), 1<<20, testLog(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	fillCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	go c.Open(context.Background(), fillCtx, "ds/held", func(ctx context.Context, w io.Writer, _ func(int64) error) error {
		w.Write([]byte("partial"))
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	<-started
	waited := make(chan struct{})
	go func() {
		c.Wait()
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("Wait returned while a fill ran")
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the fill ended")
	}
	if tmp := tempFiles(t, c); len(tmp) != 0 {
		t.Errorf("temp files left when Wait returned: %q", tmp)
	}
}
