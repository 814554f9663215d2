package hf

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/internal/testkit/fakehub"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/retry"
)

func TestParseLocation(t *testing.T) {
	for _, tc := range []struct {
		loc, repo, rev, prefix string
	}{
		{"hf://datasets/lerobot/pusht", "lerobot/pusht", "", ""},
		{"hf://datasets/lerobot/pusht/", "lerobot/pusht", "", ""},
		{"hf://datasets/lerobot/pusht@v3.0", "lerobot/pusht", "v3.0", ""},
		{"hf://datasets/lerobot/pusht@refs%2Fpr%2F1/sub/dir", "lerobot/pusht", "refs/pr/1", "sub/dir"},
		{"hf://datasets/o/n@0123456789abcdef0123456789abcdef01234567/bridge/0.1.0", "o/n", "0123456789abcdef0123456789abcdef01234567", "bridge/0.1.0"},
	} {
		t.Run(tc.loc, func(t *testing.T) {
			repo, rev, prefix, err := ParseLocation(tc.loc)
			if err != nil || repo != tc.repo || rev != tc.rev || prefix != tc.prefix {
				t.Fatalf("ParseLocation = %q, %q, %q, %v; want %q, %q, %q", repo, rev, prefix, err, tc.repo, tc.rev, tc.prefix)
			}
			b, err := New(Config{Repo: repo, Revision: rev, Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			if again, _, _, err := ParseLocation(b.Location()); err != nil || again != repo {
				t.Errorf("Location() %q does not parse back: %q, %v", b.Location(), again, err)
			}
		})
	}
	for _, tc := range []struct{ loc, want string }{
		{"hf://lerobot/pusht", `"lerobot" is not a repository kind (valid: datasets)`},
		{"hf://models/o/n", "not models"},
		{"hf://datasets/pusht", "no OWNER/NAME"},
		{"hf://datasets/o/n@", "empty or badly escaped revision"},
		{"hf://datasets/o/n@%zz", "badly escaped"},
		{"hf://datasets/o/n n", "not a repository id"},
		{"gs://bucket/x", "not an hf:// location"},
	} {
		_, _, _, err := ParseLocation(tc.loc)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), Syntax) {
			t.Errorf("ParseLocation(%q) = %v; want an error saying %q and naming %s", tc.loc, err, tc.want, Syntax)
		}
	}
}

func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"hf://datasets/lerobot/pusht", "hf://datasets/o/n@refs%2Fpr%2F1/a/b", "hf://models/x/y", "hf://datasets/a/b@/c", "hf://datasets//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, loc string) {
		repo, rev, prefix, err := ParseLocation(loc)
		if err != nil {
			return
		}
		b, err := New(Config{Repo: repo, Revision: rev, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		r2, rev2, p2, err := ParseLocation(b.Location())
		if err != nil || r2 != repo || rev2 != rev || p2 != prefix {
			t.Fatalf("%q: Location() %q parses to %q %q %q, %v", loc, b.Location(), r2, rev2, p2, err)
		}
	})
}

func readAll(t *testing.T, b storage.Backend, name string) []byte {
	t.Helper()
	got, err := storage.ReadFile(context.Background(), b, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return got
}

// TestPinnedToCommit: a backend reads the commit its revision named at its
// first read, however the branch moves after; a new backend reads the new
// commit. Tags, commits and an escaped revision with slashes resolve too.
func TestPinnedToCommit(t *testing.T) {
	hub := fakehub.New(t, fakehub.Options{})
	big := testkit.RandomBytes(t, 5000)
	first := hub.Commit(testRepo, "main", map[string][]byte{"meta/info.json": []byte(`{"v": 1}`), "data/big.bin": big})
	b := newTestBackend(t, hub, Config{})
	if got := readAll(t, b, "meta/info.json"); string(got) != `{"v": 1}` {
		t.Fatalf("info.json = %q", got)
	}
	info, err := b.Stat(context.Background(), "data/big.bin")
	if err != nil || info.Size != 5000 {
		t.Fatalf("Stat = %+v, %v", info, err)
	}
	second := hub.Commit(testRepo, "main", map[string][]byte{"meta/info.json": []byte(`{"v": 2}`), "data/big.bin": testkit.RandomBytes(t, 6000)})
	if got := readAll(t, b, "meta/info.json"); string(got) != `{"v": 1}` {
		t.Errorf("after main moved, info.json = %q; want the pinned commit's", got)
	}
	if got := readAll(t, b, "data/big.bin"); !bytes.Equal(got, big) {
		t.Errorf("after main moved, big.bin has %d bytes; want the pinned commit's 5000", len(got))
	}
	if again, err := b.Stat(context.Background(), "data/big.bin"); err != nil || again != info {
		t.Errorf("after main moved, Stat = %+v, %v; want %+v", again, err, info)
	}
	if c, _ := b.Commit(context.Background()); c != first {
		t.Errorf("Commit() = %s, want %s", c, first)
	}
	if got := readAll(t, newTestBackend(t, hub, Config{}), "meta/info.json"); string(got) != `{"v": 2}` {
		t.Errorf("a new backend reads %q; want the moved branch's", got)
	}
	hub.SetRef(testRepo, "v1.0", first)
	hub.SetRef(testRepo, "refs/pr/1", second)
	for rev, want := range map[string]string{"v1.0": `{"v": 1}`, first: `{"v": 1}`, "refs/pr/1": `{"v": 2}`} {
		if got := readAll(t, newTestBackend(t, hub, Config{Revision: rev}), "meta/info.json"); string(got) != want {
			t.Errorf("revision %s: info.json = %q, want %q", rev, got, want)
		}
	}
}

// TestVersionNamesDigest: Stat's version is the SHA-256 the Hub publishes
// for an LFS file and the git blob id for any other, and OpenVersion of a
// version the pinned commit no longer serves is a version error.
func TestVersionNamesDigest(t *testing.T) {
	hub := fakehub.New(t, fakehub.Options{})
	commit := hub.Commit(testRepo, "main", map[string][]byte{"small": []byte("hello"), "big": bytes.Repeat([]byte{7}, 2048)})
	b := newTestBackend(t, hub, Config{})
	ctx := context.Background()
	for name, want := range map[string]string{
		"small": "git-blob b6fc4c620b67d95f953a5c1c1230aaab5db5a1b0", // git hash-object of "hello"
		"big":   "sha256 " + sha256Hex(bytes.Repeat([]byte{7}, 2048)),
	} {
		info, err := b.Stat(ctx, name)
		if err != nil || info.Version != want {
			t.Errorf("Stat(%s) = %+v, %v; want version %q", name, info, err, want)
		}
		rc, err := b.OpenVersion(ctx, name, info.Version, 1, 3)
		if err != nil {
			t.Fatal(err)
		}
		rc.Close()
	}
	// What the disk cache checks a whole copy against: an LFS file's
	// SHA-256; nothing for a git blob, whose id hashes a header too.
	if info, _ := b.Stat(ctx, "big"); info.Checksum != (storage.Checksum{Algorithm: storage.SHA256, Sum: sha256Hex(bytes.Repeat([]byte{7}, 2048))}) {
		t.Errorf("Stat(big).Checksum = %+v, want the bytes' SHA-256", info.Checksum)
	}
	if info, _ := b.Stat(ctx, "small"); info.Checksum.Published() {
		t.Errorf("Stat(small).Checksum = %+v, want none", info.Checksum)
	}
	old, _ := b.Stat(ctx, "big")
	hub.Rewrite(testRepo, commit, "big", bytes.Repeat([]byte{8}, 2048))
	if _, err := b.OpenVersion(ctx, "big", old.Version, 0, -1); !errors.Is(err, storage.ErrVersionGone) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenVersion of a replaced version: %v; want storage.ErrVersionGone", err)
	}
}

// TestClearErrors: a missing repository, a missing revision and a refused
// token each say what to try, and are permanent; a missing file matches
// fs.ErrNotExist.
func TestClearErrors(t *testing.T) {
	hub := fakehub.New(t, fakehub.Options{})
	hub.Commit(testRepo, "main", map[string][]byte{"a": []byte("x")})
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		cfg   Config
		token string // the hub requires
		is    error
		want  []string
	}{
		{"missing repo", Config{Repo: "oxe/nope"}, "", ErrRepoNotFound, []string{"oxe/nope", "check OWNER/NAME", "HF_TOKEN", "401"}},
		{"missing repo, with a token", Config{Repo: "oxe/nope", Token: "hf_x"}, "", ErrRepoNotFound, []string{"oxe/nope", "404"}},
		{"missing revision", Config{Revision: "v9"}, "", ErrRevisionNotFound, []string{`"v9"`, "branch, tag or commit", Syntax}},
		{"no token", Config{}, "secret", ErrAccess, []string{"no token was sent", "set HF_TOKEN or run `huggingface-cli login`", "gated"}},
		{"wrong token", Config{Token: "hf_wrong"}, "secret", ErrAccess, []string{"the token sent was refused", "HF_TOKEN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub.RequireToken(tc.token)
			defer hub.RequireToken("")
			_, err := newTestBackend(t, hub, tc.cfg).Stat(ctx, "a")
			if !errors.Is(err, tc.is) || storage.IsTransient(err) || errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Stat: %v; want a permanent %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if _, err := newTestBackend(t, hub, Config{}).Stat(ctx, "absent"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of a missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestTokenStaysWithTheHub: the token goes to the Hub with every request,
// never to the storage host an LFS file redirects to, and never into an
// error, even one whose server message quotes it.
func TestTokenStaysWithTheHub(t *testing.T) {
	const canary = "hf_CANARYcanary0123456789"
	hub := fakehub.New(t, fakehub.Options{})
	hub.Commit(testRepo, "main", map[string][]byte{"big": testkit.RandomBytes(t, 4096), "small": []byte("s")})
	hub.RequireToken(canary)
	b := newTestBackend(t, hub, Config{Token: canary})
	readAll(t, b, "big")
	readAll(t, b, "small")
	var hubs, stores int
	for _, r := range hub.Requests() {
		switch {
		case r.Host == "hub" && r.Auth != "Bearer "+canary:
			t.Errorf("%s %s reached the hub with Authorization %q", r.Method, r.Path, r.Auth)
		case r.Host == "storage" && r.Auth != "":
			t.Errorf("%s %s reached the storage host with an Authorization header", r.Method, r.Path)
		}
		if r.Host == "hub" {
			hubs++
		} else {
			stores++
		}
	}
	if hubs == 0 || stores == 0 {
		t.Fatalf("%d requests to the hub, %d to the storage host: the test does not see both", hubs, stores)
	}
	hub.RequireToken("another")
	_, err := newTestBackend(t, hub, Config{Token: canary}).Stat(context.Background(), "small")
	if err == nil || strings.Contains(err.Error(), canary) {
		t.Errorf("refused token: %v; want an error without the token", err)
	}
	if !strings.Contains(err.Error(), "[token]") {
		t.Errorf("refused token: %q; want the server's message with the token redacted", err)
	}
}

// TestRetryAfterHonoured: under storage/retry, a 429's Retry-After from
// the Hub or from its LFS storage host (a remembered redirect's URL, which
// stays valid: a busy host is not an expired link) holds the next request
// back that long (the policy's own backoff is a millisecond), and a
// Retry-After longer than the fetch budget gives up at once, without
// asking again.
func TestRetryAfterHonoured(t *testing.T) {
	for _, tc := range []struct {
		host  string
		limit func(h *fakehub.Hub, n int, wait time.Duration)
	}{
		{"hub", (*fakehub.Hub).RateLimit},
		{"storage", (*fakehub.Hub).RateLimitStorage},
	} {
		// warm reads f once first on the storage host's turn, so that
		// its redirect is remembered and the reads under test go
		// straight there.
		warm := func(b storage.Backend) {
			if tc.host == "storage" {
				readAll(t, b, "f")
			}
		}
		t.Run(tc.host, func(t *testing.T) {
			hub := fakehub.New(t, fakehub.Options{})
			data := testkit.RandomBytes(t, 3000) // an LFS file
			hub.Commit(testRepo, "main", map[string][]byte{"f": data})
			policy := retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, MaxElapsed: 30 * time.Second, StallTimeout: 10 * time.Second}
			b := retry.New(newTestBackend(t, hub, Config{}), policy, nil, nil)
			warm(b)
			before := len(hub.Requests())
			tc.limit(hub, 2, time.Second)
			if got := readAll(t, b, "f"); !bytes.Equal(got, data) {
				t.Fatalf("read %d bytes, want %d", len(got), len(data))
			}
			reqs := hub.Requests()[before:]
			slices.SortFunc(reqs, func(a, b fakehub.Request) int { return a.Time.Compare(b.Time) })
			limited := 0
			for i, r := range reqs {
				if r.Status != http.StatusTooManyRequests {
					continue
				}
				limited++
				if r.Host != tc.host {
					t.Fatalf("a 429 from %s", r.Host)
				}
				if i+1 >= len(reqs) {
					t.Fatal("no request after a 429")
				}
				if gap := reqs[i+1].Time.Sub(r.Time); gap < time.Second {
					t.Errorf("the request after a 429 with Retry-After: 1 came %v later (%s %s)", gap, reqs[i+1].Host, reqs[i+1].Path)
				}
			}
			if limited != 2 {
				t.Fatalf("%d requests were answered 429, want 2", limited)
			}

			policy.MaxElapsed = 500 * time.Millisecond
			b = retry.New(newTestBackend(t, hub, Config{}), policy, nil, nil)
			warm(b)
			before = len(hub.Requests())
			tc.limit(hub, 1, 60*time.Second)
			_, err := storage.ReadFile(context.Background(), b, "f")
			if !errors.Is(err, storage.ErrUnavailable) {
				t.Fatalf("read under a 60s Retry-After with a 500ms budget: %v; want storage.ErrUnavailable", err)
			}
			if reqs := hub.Requests()[before:]; len(reqs) != 1 || reqs[0].Status != http.StatusTooManyRequests {
				t.Errorf("requests under a 60s Retry-After with a 500ms budget: %+v; want the one answered 429", reqs)
			}
		})
	}
}

// TestOpenFromEnvironment: storage.Open of an hf:// location reads the
// Hub at HF_ENDPOINT, with the token of HF_TOKEN, else of the token file.
func TestOpenFromEnvironment(t *testing.T) {
	hub := fakehub.New(t, fakehub.Options{})
	hub.Commit(testRepo, "main", map[string][]byte{"sub/x.json": []byte("{}")})
	t.Setenv("HF_ENDPOINT", hub.URL())
	home := t.TempDir()
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_TOKEN_PATH", "")
	t.Setenv("HF_TOKEN", "")
	if err := os.WriteFile(filepath.Join(home, "token"), []byte("hf_fromfile\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hub.RequireToken("hf_fromfile")
	b, err := storage.Open(context.Background(), "hf://datasets/"+testRepo+"/sub", storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, b, "x.json"); string(got) != "{}" {
		t.Errorf("x.json = %q", got)
	}
	t.Setenv("HF_TOKEN", "hf_fromenv")
	hub.RequireToken("hf_fromenv")
	b, _ = storage.Open(context.Background(), "hf://datasets/"+testRepo+"/sub", storage.Options{})
	readAll(t, b, "x.json")
	other := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(other, []byte("hf_frompath"), 0o600)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", other)
	if tok, err := Token(); err != nil || tok != "hf_frompath" {
		t.Errorf("Token() with HF_TOKEN_PATH = %q, %v", tok, err)
	}
	// Anonymous: no token, whatever the environment.
	b, _ = storage.Open(context.Background(), "hf://datasets/"+testRepo+"/sub", storage.Options{Anonymous: true})
	if _, err := b.Stat(context.Background(), "x.json"); !errors.Is(err, ErrAccess) || !strings.Contains(err.Error(), "read anonymously (anonymous: true") {
		t.Errorf("anonymous read of a repo that needs a token: %v, want ErrAccess saying the source is anonymous", err)
	}
}

// TestCancelledBeforeResolve: a read whose context is done fails with the
// context's error, not a transient one.
func TestCancelledBeforeResolve(t *testing.T) {
	hub := fakehub.New(t, fakehub.Options{})
	hub.Commit(testRepo, "main", map[string][]byte{"f": []byte("x")})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newTestBackend(t, hub, Config{}).Open(ctx, "f", 0, -1)
	if !errors.Is(err, context.Canceled) || storage.IsTransient(err) {
		t.Errorf("Open with a cancelled context: %v; want context.Canceled", err)
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestRedirectRemembered: after an LFS file's first redirect, its reads go
// straight to the storage host (one round trip each); once the storage
// URL expires, the next read asks the Hub for a new one and succeeds.
func TestRedirectRemembered(t *testing.T) {
	hub := fakehub.New(t, fakehub.Options{})
	data := testkit.RandomBytes(t, 10000)
	hub.Commit(testRepo, "main", map[string][]byte{"shard": data})
	b := newTestBackend(t, hub, Config{})
	ctx := context.Background()
	read := func(off int64) {
		t.Helper()
		rc, err := b.Open(ctx, "shard", off, 100)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data[off:off+100]) {
			t.Fatalf("read at %d: %d bytes, %v", off, len(got), err)
		}
	}
	count := func(from int) (hubs, stores int) {
		for _, r := range hub.Requests()[from:] {
			if r.Host == "hub" {
				hubs++
			} else {
				stores++
			}
		}
		return
	}
	read(0)
	start := len(hub.Requests())
	for off := int64(100); off < 2000; off += 100 {
		read(off)
	}
	if hubs, stores := count(start); hubs != 0 || stores != 19 {
		t.Errorf("19 reads after the first: %d requests to the hub, %d to the storage host; want 0 and 19", hubs, stores)
	}
	hub.RotateSigning()
	start = len(hub.Requests())
	read(5000)
	if hubs, stores := count(start); hubs != 1 || stores != 2 {
		t.Errorf("a read after the storage URL expired: %d requests to the hub, %d to the storage host; want 1 and 2 (the refused one, the new one)", hubs, stores)
	}
}

// TestTransientFaultsRetried: under storage/retry, the Hub's 503 and 500,
// and a body cut mid-stream, are retried (the cut one resumed at the byte
// it reached) until the file reads whole.
func TestTransientFaultsRetried(t *testing.T) {
	hub := fakehub.New(t, fakehub.Options{LFSThreshold: -1})
	data := testkit.RandomBytes(t, 200_000)
	hub.Commit(testRepo, "main", map[string][]byte{"f": data})
	proxy := testkit.NewFaultProxy(t, hub.URL(), func(i int) testkit.Fault {
		switch i {
		case 1:
			return testkit.Respond(503)
		case 2:
			return testkit.DropAfter(5000)
		case 3:
			return testkit.Respond(500)
		}
		return testkit.Pass()
	})
	stats := new(retry.Stats)
	policy := retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, MaxElapsed: 10 * time.Second, StallTimeout: 10 * time.Second}
	b, err := New(Config{Endpoint: proxy.URL(), Repo: testRepo})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, retry.New(b, policy, stats, nil), "f"); !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, want the file's %d", len(got), len(data))
	}
	if r := stats.Retries.Load(); r != 3 {
		t.Errorf("%d retries, want 3 (503, the cut body, 500)", r)
	}
	var ranges []string
	for _, r := range proxy.Requests() {
		ranges = append(ranges, r.Method+" "+r.Range)
	}
	t.Logf("requests: %q", ranges)
	if !slices.Contains(ranges, "GET bytes=5000-") {
		t.Errorf("requests %v: the cut read was not resumed at byte 5000", ranges)
	}
}

// FuzzHubHeaders: whatever a server puts in the headers oxefs reads
// (ETag, X-Linked-Etag, X-Linked-Size, Retry-After), identifying a file
// and reading its Retry-After never panic, the version names the commit or
// a digest, and no wait is negative.
func FuzzHubHeaders(f *testing.F) {
	f.Add(`"b6fc4c620b67d95f953a5c1c1230aaab5db5a1b0"`, "", "", "", 200)
	f.Add(`W/"x"`, `"0123abcd"`, "300000", "7", 302)
	f.Add("", "", "-1", "Wed, 21 Oct 2015 07:28:00 GMT", 302)
	f.Add(`""`, `"`, "99999999999999999999", "-5", 200)
	f.Fuzz(func(t *testing.T, etag, linked, size, after string, status int) {
		h := http.Header{}
		h.Set("ETag", etag)
		h.Set("X-Linked-Etag", linked)
		h.Set("X-Linked-Size", size)
		a := &answer{size: -1}
		a.identify(&http.Response{StatusCode: status, Header: h, ContentLength: -1})
		v := a.version("0123456789abcdef0123456789abcdef01234567")
		if !strings.HasPrefix(v, "commit ") && !strings.HasPrefix(v, "sha256 ") && !strings.HasPrefix(v, "git-blob ") {
			t.Errorf("version %q", v)
		}
		if a.size < -1 {
			t.Errorf("size %d", a.size)
		}
		if d := storage.ParseRetryAfter(after); d < 0 || d > 24*time.Hour {
			t.Errorf("Retry-After %q: wait %v", after, d)
		}
	})
}

// TestOpenSharesCommit: the sources storage.Open makes for one revision of
// one repository (two datasets of a mix, say) read the commit the first of
// them resolved, even when the branch moved before the second first read;
// another revision resolves on its own.
func TestOpenSharesCommit(t *testing.T) {
	hub := fakehub.New(t, fakehub.Options{})
	const repo = "oxe/shared" // a repository of its own: pins last the process
	hub.Commit(repo, "main", map[string][]byte{"a/x": []byte("1"), "b/x": []byte("1")})
	t.Setenv("HF_ENDPOINT", hub.URL())
	t.Setenv("HF_TOKEN", "")
	open := func(loc string) storage.Backend {
		b, err := storage.Open(context.Background(), loc, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first, second := open("hf://datasets/"+repo+"/a"), open("hf://datasets/"+repo+"/b")
	readAll(t, first, "x")
	c := hub.Commit(repo, "main", map[string][]byte{"a/x": []byte("2"), "b/x": []byte("2")})
	hub.SetRef(repo, "later", c)
	if got := readAll(t, second, "x"); string(got) != "1" {
		t.Errorf("the second source of main reads %q after main moved; want the first source's commit's %q", got, "1")
	}
	if got := readAll(t, open("hf://datasets/"+repo+"@later/b"), "x"); string(got) != "2" {
		t.Errorf("another revision reads %q, want %q", got, "2")
	}
}

// TestWholeReadFlipRetried: a byte flipped in transit in a whole read
// fails the check against what the Hub's answer publishes (a git file's
// ETag, its git blob id; an LFS file's X-Linked-Etag, its SHA-256):
// ReadFile through the retry layer reads it again and gets the right
// bytes; flipped on every try, it gives up with an error that names the
// object and says the bytes came damaged each time.
func TestWholeReadFlipRetried(t *testing.T) {
	files := map[string][]byte{
		"meta/info.json":         []byte(`{"codebase_version": "v3.0", "fps": 10}`), // in git
		"meta/episodes.parquet":  testkit.RandomBytes(t, 5000),                      // LFS
		"data/chunk-000/x.bytes": testkit.RandomBytes(t, 100),
	}
	for _, name := range []string{"meta/info.json", "meta/episodes.parquet"} {
		for _, always := range []bool{false, true} {
			hub := fakehub.New(t, fakehub.Options{})
			hub.Commit(testRepo, "main", files)
			var gets atomic.Int64
			// The reads that carry the file's bytes: the Hub's answer of a
			// git file, the storage host's of an LFS file (the Hub answers
			// a redirect).
			carries := func(r testkit.SeenRequest) bool { return strings.HasSuffix(r.Path, "/"+name) }
			if len(files[name]) >= 1<<10 {
				sum := sha256.Sum256(files[name])
				carries = func(r testkit.SeenRequest) bool { return r.Path == "/lfs/"+hex.EncodeToString(sum[:]) }
			}
			plan := func(r testkit.SeenRequest, _ int) testkit.Fault {
				if r.Method == "GET" && carries(r) && (gets.Add(1) == 1 || always) {
					return testkit.FlipAt(7)
				}
				return testkit.Pass()
			}
			hubProxy := testkit.NewRequestFaultProxy(t, hub.URL(), plan)
			stProxy := testkit.NewRequestFaultProxy(t, hub.StorageURL(), plan)
			hub.RedirectStorageTo(stProxy.URL())
			b, err := New(Config{Endpoint: hubProxy.URL(), Repo: testRepo})
			if err != nil {
				t.Fatal(err)
			}
			policy := retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxElapsed: time.Second, StallTimeout: time.Second}
			got, err := storage.ReadFile(context.Background(), retry.New(b, policy, nil, nil), name)
			flipped := hubProxy.Flipped() + stProxy.Flipped()
			if always {
				if !errors.Is(err, storage.ErrChecksum) || !strings.Contains(err.Error(), testRepo) || !strings.Contains(err.Error(), name) ||
					!strings.Contains(err.Error(), "damaged on each try") {
					t.Fatalf("%s flipped on every try: %v, want a checksum error naming the object", name, err)
				}
				if flipped < 2 {
					t.Fatalf("%s flipped on every try: %d tries, want retries", name, flipped)
				}
				continue
			}
			if err != nil || !bytes.Equal(got, files[name]) {
				t.Fatalf("%s flipped once: %d bytes, %v; want the file's %d", name, len(got), err, len(files[name]))
			}
			if flipped != 1 {
				t.Fatalf("%s: flipped %d responses, want 1", name, flipped)
			}
		}
	}
}

// TestTransportErrors: a host that does not resolve fails at once (no
// retry would resolve it), as on gs:// and s3://; a temporary DNS failure,
// a DNS timeout, a refused or reset connection are retried.
func TestTransportErrors(t *testing.T) {
	dial := func(err error) error {
		return fmt.Errorf("GET http://hub/x: %w", &net.OpError{Op: "dial", Net: "tcp", Err: err})
	}
	for _, tc := range []struct {
		name      string
		err       error
		transient bool
	}{
		{"no such host", dial(&net.DNSError{Err: "no such host", Name: "hub.invalid", IsNotFound: true}), false},
		{"resolver says no", dial(&net.DNSError{Err: "server misbehaving", Name: "hub"}), false},
		{"temporary DNS failure", dial(&net.DNSError{Err: "try again", Name: "hub", IsTemporary: true}), true},
		{"DNS timeout", dial(&net.DNSError{Err: "i/o timeout", Name: "hub", IsTimeout: true}), true},
		{"refused", dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)), true},
		{"reset", dial(os.NewSyscallError("read", syscall.ECONNRESET)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := transportError(tc.err)
			if storage.IsTransient(got) != tc.transient || got.Error() != tc.err.Error() {
				t.Errorf("transportError(%v) = %v, transient %v; want transient %v", tc.err, got, storage.IsTransient(got), tc.transient)
			}
		})
	}
}
