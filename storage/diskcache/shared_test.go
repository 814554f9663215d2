package diskcache

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// waitDemand waits until a reader of c waits on a fill (c.gate counts
// it), failing the test after 10s.
func waitDemand(t *testing.T, c *Cache) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if top, _ := c.gate.state(); top != Background {
			return // a reader is registered
		}
		if time.Now().After(deadline) {
			t.Fatal("no reader demand registered within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDiskCacheTwoProcessesNoDeadlock sets up the cycle seen between two
// daemons on one cache directory: each cache (one per process; flocks on
// separate open files conflict as between processes) prefetches one shard
// and holds its fill lock mid-download, then a reader in each asks for the
// shard the other one is prefetching. A paused prefetch must not keep its
// lock, or both readers wait for ever.
func TestDiskCacheTwoProcessesNoDeadlock(t *testing.T) {
	dir := t.TempDir()
	var a, b *Cache
	for _, c := range []**Cache{&a, &b} {
		var err error
		if *c, err = Open(dir, 1<<20, testLog(t), 0); err != nil {
			t.Fatal(err)
		}
	}
	want := func(key string) []byte { return bytes.Repeat([]byte(key[len(key)-1:]), 8<<10) }
	// prefetch writes its first chunk, reports it, waits for go, then
	// writes the rest: each of those writes may pause for demand.
	prefetch := func(key string, started chan<- struct{}, proceed <-chan struct{}) FillFunc {
		return func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
			data := want(key)
			if _, err := w.Write(data[:1024]); err != nil {
				return err
			}
			close(started)
			<-proceed
			for i := 1024; i < len(data); i += 1024 {
				if _, err := w.Write(data[i : i+1024]); err != nil {
					return err
				}
			}
			return nil
		}
	}
	bg := context.Background()
	type result struct {
		what string
		err  error
	}
	results := make(chan result, 4)
	open := func(c *Cache, key string, background bool, fn FillFunc) {
		o := c.Open
		if background {
			o = c.OpenBackground
		}
		go func() {
			e, err := o(bg, bg, key, fn)
			if err == nil {
				if got := readEntryErr(e); !bytes.Equal(got, want(key)) {
					err = fmt.Errorf("read %d bytes that differ from the %d written", len(got), len(want(key)))
				}
				e.Close()
			}
			results <- result{fmt.Sprintf("background=%v %s", background, key), err}
		}()
	}
	proceed := make(chan struct{})
	startedX, startedY := make(chan struct{}), make(chan struct{})
	open(a, "ds/x", true, prefetch("ds/x", startedX, proceed))
	open(b, "ds/y", true, prefetch("ds/y", startedY, proceed))
	<-startedX
	<-startedY // each prefetch now holds its shard's lock
	open(a, "ds/y", false, fillWith(want("ds/y"), nil))
	open(b, "ds/x", false, fillWith(want("ds/x"), nil))
	waitDemand(t, a)
	waitDemand(t, b)
	close(proceed) // the prefetches go on writing, and pause for the readers
	timeout := time.After(30 * time.Second)
	for range 4 {
		select {
		case r := <-results:
			if r.err != nil {
				t.Errorf("%s: %v", r.what, r.err)
			}
		case <-timeout:
			t.Fatal("deadlock: two caches on one directory, each prefetch paused while holding the lock the other's reader waits for")
		}
	}
}

func readEntryErr(e *Entry) []byte {
	b, _ := io.ReadAll(io.NewSectionReader(e, 0, e.Size()))
	return b
}

// TestDiskCacheTwoProcessesColdTrials runs 20 cold trials of two real
// processes over one new cache directory, each prefetching every shard
// while readers ask for them in another order, as two daemons do: every
// trial must finish, with every object read back whole.
func TestDiskCacheTwoProcessesColdTrials(t *testing.T) {
	if dir := os.Getenv("OXEFS_TEST_SHARED_CHILD"); dir != "" {
		sharedCacheChild(dir)
		return
	}
	const trials = 20
	for trial := range trials {
		dir := t.TempDir()
		var cmds []*exec.Cmd
		var outs []*bytes.Buffer
		var gates []io.Closer
		for p := range 2 {
			cmd := exec.Command(os.Args[0], "-test.run=^TestDiskCacheTwoProcessesColdTrials$")
			cmd.Env = append(os.Environ(), "OXEFS_TEST_SHARED_CHILD="+dir,
				"OXEFS_TEST_SHARED_SEED="+strconv.Itoa(trial*2+p))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			gate, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds, outs, gates = append(cmds, cmd), append(outs, &out), append(gates, gate)
		}
		// Both start together: each child waits for its stdin to close.
		for _, g := range gates {
			g.Close()
		}
		done := make(chan error, len(cmds))
		for _, cmd := range cmds {
			go func() { done <- cmd.Wait() }()
		}
		timeout := time.After(60 * time.Second)
		for range cmds {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("trial %d: a process failed: %v\n%s\n%s", trial, err, outs[0], outs[1])
				}
			case <-timeout:
				for _, cmd := range cmds {
					cmd.Process.Kill()
				}
				t.Fatalf("trial %d: two processes on one cache directory did not finish within 60s (deadlock)", trial)
			}
		}
	}
}

// sharedCacheChild is one process of a cold trial: once its stdin closes,
// it prefetches 12 shards in its own order, two at a time, while 4 readers
// ask for them in a random order. Every fill writes in small chunks with
// short pauses, like a download.
func sharedCacheChild(dir string) {
	io.Copy(io.Discard, os.Stdin)
	seed, _ := strconv.Atoi(os.Getenv("OXEFS_TEST_SHARED_SEED"))
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	c, err := Open(dir, 1<<30, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		panic(err)
	}
	const keys = 12
	data := func(k int) []byte { return bytes.Repeat([]byte{byte(k)}, 32<<10) }
	fill := func(k int) FillFunc {
		return func(ctx context.Context, w io.Writer, reserve func(int64) error) error {
			d := data(k)
			for i := 0; i < len(d); i += 1024 {
				if _, err := w.Write(d[i : i+1024]); err != nil {
					return err
				}
				time.Sleep(time.Millisecond)
			}
			return nil
		}
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(1)
	}
	check := func(k int, e *Entry, err error) {
		if err != nil {
			fail("shard %d: %v", k, err)
		}
		if got := readEntryErr(e); !bytes.Equal(got, data(k)) {
			fail("shard %d: read %d bytes that differ", k, len(got))
		}
		e.Close()
	}
	order := rng.Perm(keys)
	sem := make(chan struct{}, 2)
	for _, k := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			e, err := c.OpenBackground(ctx, ctx, fmt.Sprintf("ds/shard-%d", k), fill(k))
			check(k, e, err)
		}()
	}
	for r := range 4 {
		reads := rand.New(rand.NewPCG(uint64(seed), uint64(r))).Perm(keys)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, k := range reads {
				e, err := c.Open(ctx, ctx, fmt.Sprintf("ds/shard-%d", k), fill(k))
				check(k, e, err)
			}
		}()
	}
	wg.Wait()
}
