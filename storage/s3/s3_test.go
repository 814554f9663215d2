package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/johannesboyne/gofakes3"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/diskcache"
	"github.com/oxefs/oxefs/storage/ratelimit"
	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/storage/storagetest"
)

// key is the object key of name under the usual test prefix.
func key(name string) string { return path.Join(testkit.S3Prefix, name) }

// readAll returns a function that reads the whole of an opened stream,
// closing it, and fails t on an error.
func readAll(t *testing.T) func(rc io.ReadCloser, err error) []byte {
	return func(rc io.ReadCloser, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// TestOpenFromEnvironment: an s3:// location opened through the registry
// reaches the endpoint that AWS_ENDPOINT_URL_S3 names, path-style (the
// bucket in the path, as S3-compatible stores serve it), with the region
// defaulted, anonymously or with the environment's keys.
func TestOpenFromEnvironment(t *testing.T) {
	data := testkit.RandomBytes(t, 1000)
	srv := testkit.StartFakeS3(t, testkit.S3Bucket, map[string][]byte{key("a/obj"): data})
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_REGION", "")
	for _, anonymous := range []bool{false, true} {
		b, err := storage.Open(context.Background(), "s3://"+testkit.S3Bucket+"/"+testkit.S3Prefix+"/", storage.Options{Anonymous: anonymous})
		if err != nil {
			t.Fatal(err)
		}
		if b.Location() != "s3://oxe-test/bridge/0.1.0" {
			t.Errorf("Location() = %q", b.Location())
		}
		if got := readAll(t)(b.Open(context.Background(), "a/obj", 10, 20)); !bytes.Equal(got, data[10:30]) {
			t.Errorf("anonymous %v: read other bytes", anonymous)
		}
	}
	for _, r := range srv.Requests() {
		if !strings.HasPrefix(r.Path, "/"+testkit.S3Bucket+"/") {
			t.Errorf("request to %s, want path-style /BUCKET/KEY", r.Path)
		}
	}
	if _, err := storage.Open(context.Background(), "s3://", storage.Options{}); err == nil || !strings.Contains(err.Error(), "no bucket after s3://") {
		t.Errorf("s3:// without a bucket: %v", err)
	}
}

// TestVersionByETag: in an unversioned bucket a read pinned to what Stat
// gave serves those bytes while they are there; once the object is
// rewritten it fails with storage.ErrVersionGone (not fs.ErrNotExist),
// even though gofakes3 ignores If-Match on GET (the response's ETag is
// checked too). Stat reports the ETag as the MD5 of a single-part upload.
func TestVersionByETag(t *testing.T) {
	ctx := context.Background()
	data := testkit.RandomBytes(t, 5000)
	srv := testkit.StartFakeS3(t, testkit.S3Bucket, map[string][]byte{key("obj"): data})
	b := NewWithConfig(srv.Config(), testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
	info, err := b.Stat(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseVersion(info.Version)
	sum := md5.Sum(data)
	if err != nil || v.ID != "" || v.ETag != hex.EncodeToString(sum[:]) || v.MD5 != v.ETag {
		t.Fatalf("Stat version %q (%+v, %v): want the MD5 as etag and md5, no version id", info.Version, v, err)
	}
	if got := readAll(t)(b.OpenVersion(ctx, "obj", info.Version, 100, 50)); !bytes.Equal(got, data[100:150]) {
		t.Fatal("OpenVersion read other bytes")
	}
	srv.Put(t, testkit.S3Bucket, key("obj"), testkit.RandomBytes(t, 5000))
	_, err = b.OpenVersion(ctx, "obj", info.Version, 100, 50)
	if !errors.Is(err, storage.ErrVersionGone) || errors.Is(err, fs.ErrNotExist) || storage.IsTransient(err) {
		t.Fatalf("OpenVersion of a rewritten object: %v, want ErrVersionGone only", err)
	}
}

// TestVersionByID: in a versioned bucket Stat names the version id, and a
// read pinned to it serves the old bytes after the object is rewritten;
// once that version is deleted the read is ErrVersionGone.
func TestVersionByID(t *testing.T) {
	ctx := context.Background()
	data := testkit.RandomBytes(t, 5000)
	srv := testkit.StartFakeS3(t, testkit.S3Bucket, nil)
	srv.Versioned(t, testkit.S3Bucket)
	srv.Put(t, testkit.S3Bucket, key("obj"), data)
	b := NewWithConfig(srv.Config(), testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
	info, err := b.Stat(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseVersion(info.Version)
	if err != nil || v.ID == "" {
		t.Fatalf("Stat version %q in a versioned bucket: %+v, %v; want a version id", info.Version, v, err)
	}
	srv.Put(t, testkit.S3Bucket, key("obj"), testkit.RandomBytes(t, 6000))
	if again, _ := b.Stat(ctx, "obj"); again.Version == info.Version || again.Size != 6000 {
		t.Fatalf("Stat after a rewrite: %+v, want size 6000 and a new version", again)
	}
	if got := readAll(t)(b.OpenVersion(ctx, "obj", info.Version, 0, -1)); !bytes.Equal(got, data) {
		t.Fatal("the pinned version's read served other bytes after a rewrite")
	}
	if _, err := srv.Backend.DeleteObjectVersion(testkit.S3Bucket, key("obj"), gofakes3.VersionID(v.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.OpenVersion(ctx, "obj", info.Version, 0, -1); !errors.Is(err, storage.ErrVersionGone) {
		t.Fatalf("OpenVersion of a deleted version: %v, want ErrVersionGone", err)
	}
}

// TestVersionReadsDenied: where reading versions by id is refused (403:
// s3:GetObject granted, s3:GetObjectVersion not, as on many public
// buckets), reads pinned to a version fall back to its ETag: they serve
// the bytes while they are there, and ErrVersionGone after a rewrite.
func TestVersionReadsDenied(t *testing.T) {
	ctx := context.Background()
	data := testkit.RandomBytes(t, 5000)
	srv := testkit.StartFakeS3(t, testkit.S3Bucket, nil)
	srv.Versioned(t, testkit.S3Bucket)
	srv.DenyVersionReads()
	srv.Put(t, testkit.S3Bucket, key("obj"), data)
	b := NewWithConfig(srv.Config(), testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
	info, err := b.Stat(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := ParseVersion(info.Version); v.ID == "" {
		t.Fatalf("Stat version %q: want a version id", info.Version)
	}
	for range 2 {
		if got := readAll(t)(b.OpenVersion(ctx, "obj", info.Version, 10, 100)); !bytes.Equal(got, data[10:110]) {
			t.Fatal("OpenVersion read other bytes")
		}
	}
	srv.Put(t, testkit.S3Bucket, key("obj"), testkit.RandomBytes(t, 5000))
	if _, err := b.OpenVersion(ctx, "obj", info.Version, 10, 100); !errors.Is(err, storage.ErrVersionGone) {
		t.Fatalf("OpenVersion after a rewrite: %v, want ErrVersionGone", err)
	}
	var denied int
	for _, r := range srv.Requests() {
		if r.Status == 403 {
			denied++
		}
	}
	if denied != 1 {
		t.Errorf("%d reads by version id refused, want 1 (then reads go by ETag)", denied)
	}
}

// TestEmptyObject: an empty object reads as empty, whole or from any
// offset, and Stats as size 0.
func TestEmptyObject(t *testing.T) {
	srv := testkit.StartFakeS3(t, testkit.S3Bucket, map[string][]byte{key("empty"): {}})
	b := NewWithConfig(srv.Config(), testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
	for _, r := range [][2]int64{{0, -1}, {0, 10}, {3, -1}} {
		if got := readAll(t)(b.Open(context.Background(), "empty", r[0], r[1])); len(got) != 0 {
			t.Errorf("read %v of an empty object: %d bytes", r, len(got))
		}
	}
	if info, err := b.Stat(context.Background(), "empty"); err != nil || info.Size != 0 {
		t.Errorf("Stat = %+v, %v", info, err)
	}
}

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version
		err  string
	}{
		{"etag abc", Version{ETag: "abc"}, ""},
		{"version-id v1 etag abc md5 abc crc32c 0000002a", Version{ID: "v1", ETag: "abc", MD5: "abc", CRC32C: "0000002a"}, ""},
		{"generation 5 crc32c 0000002a", Version{}, `unknown field "generation"`},
		{"version-id v1", Version{}, "no etag"},
		{"etag", Version{}, "want"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			v, err := ParseVersion(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseVersion(%q) = %+v, %v; want an error saying %q", tc.in, v, err, tc.err)
				}
				return
			}
			if err != nil || v != tc.want || v.String() != tc.in {
				t.Fatalf("ParseVersion(%q) = %+v (%q), %v; want %+v", tc.in, v, v.String(), err, tc.want)
			}
		})
	}
	// S3 publishes CRC32C as base64 of the big-endian value.
	if got := crc32cHex("AAAAKg=="); got != "0000002a" {
		t.Errorf("crc32cHex(AAAAKg==) = %q", got)
	}
	if got := crc32cHex("AAAAKg==-3"); got != "" {
		t.Errorf("a composite checksum gave %q", got)
	}
}

// TestErrors: each failure a user meets is classified (missing object or
// bucket: fs.ErrNotExist; refused: fs.ErrPermission; 5xx and throttling:
// transient) and says what to try.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	srv := testkit.StartFakeS3(t, testkit.S3Bucket, map[string][]byte{key("obj"): []byte("data")})
	read := func(b *Backend, name string) error {
		rc, err := b.Open(ctx, name, 0, -1)
		if err == nil {
			_, err = io.ReadAll(rc)
			rc.Close()
		}
		return err
	}
	t.Run("missing key", func(t *testing.T) {
		b := NewWithConfig(srv.Config(), testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
		err := read(b, "absent")
		if !errors.Is(err, fs.ErrNotExist) || storage.IsTransient(err) || !strings.Contains(err.Error(), "s3://oxe-test/bridge/0.1.0/absent") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("missing bucket", func(t *testing.T) {
		b := NewWithConfig(srv.Config(), "nobucket", "x", storage.Options{})
		err := read(b, "obj")
		for _, want := range []string{`no bucket "nobucket" at ` + srv.URL, "AWS_ENDPOINT_URL_S3", "AWS_REGION"} {
			if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), want) {
				t.Errorf("%v\nwant fs.ErrNotExist, saying %q", err, want)
			}
		}
	})
	t.Run("refused", func(t *testing.T) {
		srv.RequireKey("AKIAOTHER")
		defer srv.RequireKey("")
		b := NewWithConfig(srv.Config(), testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
		for _, err := range []error{read(b, "obj"), func() error { _, err := b.Stat(ctx, "obj"); return err }()} {
			if !errors.Is(err, fs.ErrPermission) || storage.IsTransient(err) || !strings.Contains(err.Error(), "--anonymous") {
				t.Errorf("with refused credentials: %v\nwant fs.ErrPermission naming --anonymous", err)
			}
		}
		anon := srv.Config()
		anon.Credentials = aws.AnonymousCredentials{}
		b = NewWithConfig(anon, testkit.S3Bucket, testkit.S3Prefix, storage.Options{Anonymous: true})
		if err := read(b, "obj"); !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "refuses anonymous reads") {
			t.Errorf("anonymous on a private bucket: %v", err)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
			"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
			t.Setenv(k, "")
		}
		t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
		t.Setenv("AWS_CONFIG_FILE", "/dev/null")
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
		t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
		_, err := New(ctx, testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
		for _, want := range []string{"s3://oxe-test/bridge/0.1.0: no AWS credentials", "AWS_ACCESS_KEY_ID", "AWS_PROFILE", "--anonymous"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%v\nwant it to say %q", err, want)
			}
		}
	})
	t.Run("transient", func(t *testing.T) {
		for _, code := range []int{500, 503, 429, 408} {
			proxy := testkit.NewFaultProxy(t, srv.URL, func(int) testkit.Fault { return testkit.Respond(code) })
			cfg := srv.Config()
			cfg.BaseEndpoint = aws.String(proxy.URL())
			b := NewWithConfig(cfg, testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
			if err := read(b, "obj"); !storage.IsTransient(err) {
				t.Errorf("HTTP %d: %v, want transient", code, err)
			}
			if _, err := b.Stat(ctx, "obj"); !storage.IsTransient(err) {
				t.Errorf("HTTP %d on HEAD: %v, want transient", code, err)
			}
		}
		cfg := srv.Config()
		cfg.BaseEndpoint = aws.String("http://127.0.0.1:1")
		b := NewWithConfig(cfg, testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
		if err := read(b, "obj"); !storage.IsTransient(err) {
			t.Errorf("connection refused: %v, want transient", err)
		}
	})
}

// TestWholeReadChecksum: a whole-object read whose bytes do not match the
// CRC32C the store publishes fails with storage.ErrChecksum, transient (a
// retrying copy reads it again); a ranged read is not checked against the
// whole object's checksum, even where a store sends it.
func TestWholeReadChecksum(t *testing.T) {
	srv := testkit.StartFakeS3(t, testkit.S3Bucket, map[string][]byte{key("obj"): []byte("some bytes of an object")})
	up, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(up)
	proxy.ModifyResponse = func(res *http.Response) error {
		res.Header.Set("x-amz-checksum-crc32c", "AAAAAA==") // the CRC32C of other bytes
		return nil
	}
	ps := httptest.NewServer(proxy)
	defer ps.Close()
	cfg := srv.Config()
	cfg.BaseEndpoint = aws.String(ps.URL)
	b := NewWithConfig(cfg, testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
	rc, err := b.Open(context.Background(), "obj", 0, -1)
	if err == nil {
		_, err = io.ReadAll(rc)
		rc.Close()
	}
	if !errors.Is(err, storage.ErrChecksum) || !storage.IsTransient(err) {
		t.Fatalf("a whole read with a wrong checksum: %v, want a transient ErrChecksum", err)
	}
	if got := readAll(t)(b.Open(context.Background(), "obj", 5, 5)); string(got) != "bytes" {
		t.Fatalf("ranged read: %q", got)
	}
}

// TestStatPublishesChecksum: Stat gives what the disk cache checks a whole
// copy against: a single-part upload's ETag as its MD5.
func TestStatPublishesChecksum(t *testing.T) {
	data := []byte("some bytes of an object")
	srv := testkit.StartFakeS3(t, testkit.S3Bucket, map[string][]byte{key("obj"): data})
	b := NewWithConfig(srv.Config(), testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
	info, err := b.Stat(context.Background(), "obj")
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum(data)
	if want := (storage.Checksum{Algorithm: storage.MD5, Sum: hex.EncodeToString(sum[:])}); info.Checksum != want {
		t.Fatalf("Stat checksum %+v, want %+v", info.Checksum, want)
	}
	h, err := info.Checksum.NewHash()
	if err != nil {
		t.Fatal(err)
	}
	h.Write(data)
	if err := info.Checksum.Check("obj", h.Sum(nil)); err != nil {
		t.Fatal(err)
	}
}

// TestDecoratorsCompose runs the conformance suite through the stack a
// daemon builds over a remote source, disk cache over rate limit over
// retries over S3, with a proxy that fails every third request with 503
// and cuts every fifth response short: the decorators carry it.
func TestDecoratorsCompose(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) (storage.Backend, storagetest.Put) {
		srv := testkit.StartFakeS3(t, testkit.S3Bucket, nil)
		proxy := testkit.NewFaultProxy(t, srv.URL, func(i int) testkit.Fault {
			switch {
			case i%3 == 2:
				return testkit.Respond(503)
			case i%5 == 4:
				return testkit.DropAfter(512)
			}
			return testkit.Pass()
		})
		cfg := srv.Config()
		cfg.BaseEndpoint = aws.String(proxy.URL())
		b := NewWithConfig(cfg, testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
		policy := retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxElapsed: 10 * time.Second, StallTimeout: 5 * time.Second}
		remote := ratelimit.New(retry.New(b, policy, nil, nil), ratelimit.NewLimiter(1<<30))
		c, err := diskcache.Open(t.TempDir(), 1<<30, slog.New(slog.DiscardHandler), 0)
		if err != nil {
			t.Fatal(err)
		}
		return c.Wrap(remote, "src", context.Background()), func(t *testing.T, name string, data []byte) {
			srv.Put(t, testkit.S3Bucket, key(name), data)
		}
	})
}

// FuzzParseVersion: ParseVersion never panics, and what it accepts prints
// back (String) to a version it parses to the same fields.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"etag abc", "version-id v1 etag abc md5 abc crc32c 0000002a", "generation 5 crc32c 1", "", "etag"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		again, err := ParseVersion(v.String())
		if err != nil || again != v {
			t.Fatalf("ParseVersion(%q) = %+v, whose String %q parses to %+v, %v", s, v, v.String(), again, err)
		}
	})
}

// TestWholeReadFlipRetried: a byte flipped in transit in a whole read of
// an object whose store publishes no CRC32C (gofakes3 sends none) fails
// the check of the ETag, the MD5 of a single-part upload: ReadFile through
// the retry layer reads it again and gets the right bytes; flipped on
// every try, it gives up with an error that names the object and says the
// bytes came damaged each time.
func TestWholeReadFlipRetried(t *testing.T) {
	data := []byte(`{"name": "bridge", "version": "0.1.0"}`)
	srv := testkit.StartFakeS3(t, testkit.S3Bucket, map[string][]byte{key("dataset_info.json"): data})
	for _, always := range []bool{false, true} {
		var gets atomic.Int64 // nth counts the HEADs of the object too
		proxy := testkit.NewRequestFaultProxy(t, srv.URL, func(r testkit.SeenRequest, _ int) testkit.Fault {
			if r.ReadsObject("dataset_info.json") && (gets.Add(1) == 1 || always) {
				return testkit.FlipAt(10)
			}
			return testkit.Pass()
		})
		cfg := srv.Config()
		cfg.BaseEndpoint = aws.String(proxy.URL())
		b := retry.New(NewWithConfig(cfg, testkit.S3Bucket, testkit.S3Prefix, storage.Options{}),
			retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxElapsed: 2 * time.Second, StallTimeout: time.Second}, nil, nil)
		got, err := storage.ReadFileMax(context.Background(), b, "dataset_info.json", 1<<20)
		if always {
			if !errors.Is(err, storage.ErrChecksum) || !strings.Contains(err.Error(), "s3://"+testkit.S3Bucket+"/"+key("dataset_info.json")) ||
				!strings.Contains(err.Error(), "damaged on each try") {
				t.Fatalf("flipped on every try: %v, want a checksum error naming the object", err)
			}
			if proxy.Flipped() < 2 {
				t.Fatalf("flipped on every try: %d tries, want retries", proxy.Flipped())
			}
			continue
		}
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("flipped once: %q, %v; want %q", got, err, data)
		}
		if proxy.Flipped() != 1 {
			t.Fatalf("flipped %d responses, want 1", proxy.Flipped())
		}
	}
}

// TestResumedWholeReadChecked: a whole read cut mid-stream is resumed
// from the byte it reached by a ranged read, which no checksum of its
// answer covers: ReadFile then checks the bytes against Stat's checksum,
// so a byte flipped in the resumed part is a transient checksum error,
// never wrong bytes, and a clean resume gives the object.
func TestResumedWholeReadChecked(t *testing.T) {
	data := bytes.Repeat([]byte(`{"name": "bridge", "version": "0.1.0"}`), 100)
	srv := testkit.StartFakeS3(t, testkit.S3Bucket, map[string][]byte{key("features.json"): data})
	for _, flip := range []bool{false, true} {
		proxy := testkit.NewRequestFaultProxy(t, srv.URL, func(r testkit.SeenRequest, _ int) testkit.Fault {
			switch {
			case !r.ReadsObject("features.json"):
			case r.Range == "":
				return testkit.DropAfter(1000)
			case flip:
				return testkit.FlipAt(5)
			}
			return testkit.Pass()
		})
		cfg := srv.Config()
		cfg.BaseEndpoint = aws.String(proxy.URL())
		b := retry.New(NewWithConfig(cfg, testkit.S3Bucket, testkit.S3Prefix, storage.Options{}),
			retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxElapsed: 2 * time.Second, StallTimeout: time.Second}, nil, nil)
		got, err := storage.ReadFile(context.Background(), b, "features.json")
		var resumed bool
		for _, r := range proxy.Requests() {
			resumed = resumed || r.Range == "bytes=1000-"
		}
		if !resumed {
			t.Fatalf("the cut read was not resumed at byte 1000: %+v", proxy.Requests())
		}
		if flip {
			if !errors.Is(err, storage.ErrChecksum) || !storage.IsTransient(err) {
				t.Fatalf("resumed part flipped: %d bytes, %v; want a transient checksum error", len(got), err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("clean resume: %d bytes, %v; want the object's %d", len(got), err, len(data))
		}
	}
}

// TestRetryAfterHonoured: under storage/retry, a 503 SlowDown's
// Retry-After holds the next request back that long (the policy's own
// backoff is a millisecond), and a Retry-After longer than the fetch
// budget gives up at once, without asking again.
func TestRetryAfterHonoured(t *testing.T) {
	data := testkit.RandomBytes(t, 3000)
	for _, tc := range []struct {
		name     string
		limited  int
		wait     time.Duration
		budget   time.Duration
		giveUp   bool
		requests int
	}{
		{"waits", 2, time.Second, 30 * time.Second, false, 3},
		{"gives up past the budget", 1, 60 * time.Second, 500 * time.Millisecond, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testkit.StartFakeS3(t, testkit.S3Bucket, map[string][]byte{key("obj"): data})
			policy := retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, MaxElapsed: tc.budget, StallTimeout: 10 * time.Second}
			b := retry.New(NewWithConfig(srv.Config(), testkit.S3Bucket, testkit.S3Prefix, storage.Options{}), policy, nil, nil)
			srv.Throttle(tc.limited, tc.wait)
			var got bytes.Buffer
			_, err := b.Fetch(context.Background(), "obj", &got)
			switch {
			case tc.giveUp && !errors.Is(err, storage.ErrUnavailable):
				t.Fatalf("fetch under a %v Retry-After with a %v budget: %v; want storage.ErrUnavailable", tc.wait, tc.budget, err)
			case !tc.giveUp && (err != nil || !bytes.Equal(got.Bytes(), data)):
				t.Fatalf("fetch: %d bytes, %v", got.Len(), err)
			}
			reqs := srv.Requests()
			if len(reqs) != tc.requests {
				t.Fatalf("%d requests, want %d: %+v", len(reqs), tc.requests, reqs)
			}
			for i := 1; i < len(reqs); i++ {
				if gap := reqs[i].Time.Sub(reqs[i-1].Time); reqs[i-1].Status == http.StatusServiceUnavailable && gap < tc.wait {
					t.Errorf("request %d came %v after a 503 with Retry-After %v", i, gap, tc.wait)
				}
			}
		})
	}
}
