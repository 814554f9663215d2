package rlds

import (
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/store"

	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxyAction is what an objectProxy does with one request.
type proxyAction int

const (
	actPass proxyAction = iota // forward the request and its response
	actHang                    // accept the request and never answer
	actFlip                    // forward, flipping one byte of the body
)

// objectProxy is an HTTP proxy in front of the fake GCS server that decides
// by object path: rule gets the request's path and how many requests for
// that path came before, and can be swapped while the test runs.
type objectProxy struct {
	// dependencies
	srv      *httptest.Server
	upstream string

	// constants
	done chan struct{} // closed when the test ends; releases hanging handlers

	rule atomic.Pointer[func(path string, nth int) proxyAction]

	mu   sync.Mutex
	seen []string // guarded by mu: request paths, in order
}

func newObjectProxy(t testing.TB, upstream string, rule func(path string, nth int) proxyAction) *objectProxy {
	t.Helper()
	p := &objectProxy{upstream: upstream, done: make(chan struct{})}
	p.setRule(rule)
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	t.Cleanup(func() { close(p.done) }) // runs first: hanging handlers return
	return p
}

func (p *objectProxy) setRule(rule func(path string, nth int) proxyAction) { p.rule.Store(&rule) }

func (p *objectProxy) URL() string { return p.srv.URL }

// count returns how many requests so far had a path containing sub.
func (p *objectProxy) count(sub string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.seen {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

func (p *objectProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	nth := 0
	for _, s := range p.seen {
		if s == r.URL.Path {
			nth++
		}
	}
	p.seen = append(p.seen, r.URL.Path)
	p.mu.Unlock()
	act := (*p.rule.Load())(r.URL.Path, nth)
	if act == actHang {
		select {
		case <-r.Context().Done():
		case <-p.done:
		}
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if act == actFlip && len(body) > 0 {
		body[len(body)/2] ^= 0x01
	}
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	w.Write(body)
}

func isShard(p string) bool { return strings.Contains(p, ".tfrecord-") }

// deadShardStore serves the tiny_bridge fixture through an objectProxy and
// opens it in a store with a short retry budget.
func deadShardStore(t *testing.T, policy retry.Policy) (*store.Store, *Dataset, *objectProxy, manifestDataset) {
	t.Helper()
	md := loadManifest(t).Datasets["tiny_bridge"]
	upstream := testkit.StartFakeGCS(t, fixtureObjects(t, md.Dir))
	proxy := newObjectProxy(t, upstream.URL(), func(string, int) proxyAction { return actPass })
	src := gcs.NewWithClient(testkit.NewGCSClient(t, proxy.URL()), testkit.GCSBucket, path.Join(testkit.GCSPrefix, md.Dir))
	s, err := store.NewStore(mustOptions(stackOptions(t, t.TempDir(), 1<<30, policy)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ds, err := Open(context.Background(), s, "", src)
	if err != nil {
		t.Fatal(err)
	}
	return s, ds, proxy, md
}

// deadShardPolicy is a short retry budget for the dead-shard tests.
var deadShardPolicy = retry.Policy{
	InitialBackoff: 20 * time.Millisecond,
	MaxBackoff:     500 * time.Millisecond,
	MaxElapsed:     time.Second,
	StallTimeout:   300 * time.Millisecond,
}

// hangShards makes every shard request hang; metadata still passes.
func hangShards(proxy *objectProxy) {
	proxy.setRule(func(p string, _ int) proxyAction {
		if isShard(p) {
			return actHang
		}
		return actPass
	})
}

// TestDeadShardFailsFast: a read of a shard whose source hangs gets
// ErrUnavailable within the retry budget (MaxElapsed + StallTimeout), and
// the reads of that shard's other episodes that follow fail at once, without
// asking the source again, until the failure memo expires (MaxBackoff, at
// most MaxElapsed); then a read asks again and, the source being back,
// succeeds.
func TestDeadShardFailsFast(t *testing.T) {
	policy := deadShardPolicy
	promise := policy.MaxElapsed + policy.StallTimeout
	_, ds, proxy, md := deadShardStore(t, policy)
	hangShards(proxy)
	ctx := context.Background()
	shard := md.Splits["train"].Shards[0]
	start := time.Now()
	_, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: 0})
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("episode of a hanging shard: %v, want ErrUnavailable", err)
	}
	// Generous: the promise is MaxElapsed + StallTimeout plus scheduling.
	if d := time.Since(start); d > 3*promise {
		t.Fatalf("ErrUnavailable after %v; the budget is %v", d, promise)
	}
	asked := proxy.count(shard.File)
	if asked == 0 {
		t.Fatal("the proxy saw no request for the shard")
	}
	for _, rec := range shard.Records[1:] {
		_, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: rec.Index})
		if !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("record %d of the failed shard: %v, want ErrUnavailable", rec.Index, err)
		}
	}
	if n := proxy.count(shard.File); n != asked {
		t.Fatalf("%d more requests for the failed shard: each episode waited out the budget again", n-asked)
	}

	// The batch path: FetchShards fails at once on the remembered shard.
	refs := []ShardRef{{Dataset: ds, Split: "train", Shard: 0}}
	if err := FetchShards(ctx, ds.store, refs); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("FetchShards of the failed shard: %v, want ErrUnavailable", err)
	}
	if n := proxy.count(shard.File); n != asked {
		t.Fatalf("FetchShards asked the source again within the memo window (%d requests)", n-asked)
	}

	// The source comes back; once the memo expires the read succeeds.
	proxy.setRule(func(string, int) proxyAction { return actPass })
	time.Sleep(policy.MaxBackoff) // the memo window: the contract under test
	ep, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: shard.Records[1].Index})
	if err != nil {
		t.Fatalf("after the source came back and the memo expired: %v", err)
	}
	checkEpisode(t, md.Name, ep, shard.Records[1])
}

// TestFetchShardsOneBudget: a batch's shards are fetched at once, so a
// batch over several dead shards fails within one retry budget, not one per
// shard.
func TestFetchShardsOneBudget(t *testing.T) {
	policy := deadShardPolicy
	promise := policy.MaxElapsed + policy.StallTimeout
	s, ds, proxy, md := deadShardStore(t, policy)
	hangShards(proxy)
	var refs []ShardRef
	for split, sp := range md.Splits {
		for i := range sp.Shards {
			refs = append(refs, ShardRef{Dataset: ds, Split: split, Shard: i})
		}
	}
	if len(refs) < 3 {
		t.Fatalf("fixture has %d shards; the test needs several", len(refs))
	}
	start := time.Now()
	err := FetchShards(context.Background(), s, refs)
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("FetchShards over dead shards: %v, want ErrUnavailable", err)
	}
	// Serially the shards would take len(refs) budgets.
	if d := time.Since(start); d > 2*promise {
		t.Fatalf("FetchShards took %v over %d dead shards; one budget is %v", d, len(refs), promise)
	}

	// With the source back, they all arrive once the fetches still going
	// on when FetchShards returned have given up and their memo expired.
	proxy.setRule(func(string, int) proxyAction { return actPass })
	time.Sleep(promise + policy.MaxBackoff)
	if err := FetchShards(context.Background(), s, refs); err != nil {
		t.Fatalf("FetchShards with the source back: %v", err)
	}
	for _, r := range refs {
		name, _ := ds.ShardName(r.Split, r.Shard)
		if !wholeCached(t, ds, name) {
			t.Errorf("%s not in the disk cache after FetchShards", name)
		}
	}
}

// TestReadFileRetriesBadChecksum: one flipped byte in transit fails the
// storage client's CRC32C check; the metadata read retries from the start
// and the dataset opens with the right bytes.
func TestReadFileRetriesBadChecksum(t *testing.T) {
	md := loadManifest(t).Datasets["tiny_bridge"]
	objects := fixtureObjects(t, md.Dir)
	upstream := testkit.StartFakeGCS(t, objects)
	proxy := newObjectProxy(t, upstream.URL(), func(p string, nth int) proxyAction {
		if strings.HasSuffix(p, "/dataset_info.json") && nth == 0 {
			return actFlip
		}
		return actPass
	})
	src := gcs.NewWithClient(testkit.NewGCSClient(t, proxy.URL()), testkit.GCSBucket, path.Join(testkit.GCSPrefix, md.Dir))
	f := retry.New(src, retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		MaxElapsed: 5 * time.Second, StallTimeout: 5 * time.Second}, nil, nil)
	got, err := storage.ReadFile(context.Background(), f, "dataset_info.json")
	if err != nil {
		t.Fatalf("ReadFile with one flipped byte in the first response: %v", err)
	}
	if !bytes.Equal(got, objects[path.Join(md.Dir, "dataset_info.json")]) {
		t.Fatalf("ReadFile returned %d bytes that differ from the object", len(got))
	}
	if n := proxy.count("/dataset_info.json"); n != 2 {
		t.Fatalf("%d requests for dataset_info.json, want 2 (the corrupted one and its retry)", n)
	}

	// A writer that cannot start over gets the checksum error, never the
	// bad bytes as if they were good.
	proxy.setRule(func(string, int) proxyAction { return actFlip })
	var w onlyWriter
	if _, err := f.Fetch(context.Background(), "features.json", &w); !errors.Is(err, storage.ErrChecksum) {
		t.Fatalf("Fetch into a plain writer with a flipped byte: %v, want a checksum error", err)
	}
}

// onlyWriter is an io.Writer with no way to start over.
type onlyWriter struct{ b bytes.Buffer }

func (w *onlyWriter) Write(p []byte) (int, error) { return w.b.Write(p) }

// TestRememberedShardSkipsIndexSlots: indexing a shard whose failure is
// remembered fails at once with that failure, before it waits for an index
// slot (here, with a context that could get none).
func TestRememberedShardSkipsIndexSlots(t *testing.T) {
	_, ds, proxy, md := deadShardStore(t, deadShardPolicy)
	hangShards(proxy)
	if _, err := ds.Episode(context.Background(), Ref{Split: "train", Shard: 0, Record: 0}); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("episode of a hanging shard: %v, want ErrUnavailable", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := ds.indexByHops(ctx, md.Splits["train"].Shards[0].File, &hopIndex{})
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("indexing the remembered shard: %v, want its ErrUnavailable before any slot", err)
	}
}
