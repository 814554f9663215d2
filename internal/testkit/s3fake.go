package testkit

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// The bucket, prefix and access key of FakeS3's usual setup.
const (
	S3Bucket    = "oxe-test"
	S3Prefix    = "bridge/0.1.0"
	S3AccessKey = "AKIAOXEFSTEST"
	S3SecretKey = "oxefs-test-secret"
)

// FakeS3 is an in-process gofakes3 server (a real S3 protocol server,
// objects in memory) on loopback, which counts the requests and body bytes
// it serves and can refuse requests not signed with one access key.
type FakeS3 struct {
	URL     string // http://127.0.0.1:PORT, for AWS_ENDPOINT_URL_S3
	Backend *s3mem.Backend

	srv *httptest.Server

	mu       sync.Mutex
	requests []S3Request // guarded by mu
	// requireKey, when set, refuses (403 AccessDenied) every request not
	// signed with that access key.
	requireKey string // guarded by mu
	versioned  bool   // guarded by mu: see Versioned
	// denyVersions refuses (403) reads of a version by id.
	denyVersions bool // guarded by mu
	// throttled requests still to answer 503 SlowDown with a Retry-After
	// of throttleAfter.
	throttled     int           // guarded by mu
	throttleAfter time.Duration // guarded by mu
}

// S3Request is one request FakeS3 served.
type S3Request struct {
	Method, Path, Range string
	Status              int
	Bytes               int64     // body bytes sent
	Time                time.Time // when the request arrived
}

// StartFakeS3 serves objects (named by full key) in bucket from an
// in-process gofakes3, stopped at the end of the test.
func StartFakeS3(t testing.TB, bucket string, objects map[string][]byte) *FakeS3 {
	t.Helper()
	f := &FakeS3{Backend: s3mem.New()}
	faker := gofakes3.New(f.Backend, gofakes3.WithLogger(gofakes3.DiscardLog()))
	h := faker.Server()
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		f.mu.Lock()
		key, versioned, denyVersions := f.requireKey, f.versioned, f.denyVersions
		throttled, wait := f.throttled, f.throttleAfter
		if throttled > 0 {
			f.throttled--
		}
		f.mu.Unlock()
		cw := &countingWriter{ResponseWriter: w, status: http.StatusOK, hideVersion: !versioned}
		refused := key != "" && !strings.Contains(r.Header.Get("Authorization"), "Credential="+key+"/")
		if throttled > 0 {
			cw.Header().Set("Content-Type", "application/xml")
			cw.Header().Set("Retry-After", strconv.Itoa(max(1, int((wait+time.Second-1)/time.Second))))
			cw.WriteHeader(http.StatusServiceUnavailable)
			if r.Method != http.MethodHead {
				_, _ = cw.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`))
			}
		} else if refused || (denyVersions && r.URL.Query().Has("versionId")) {
			cw.Header().Set("Content-Type", "application/xml")
			cw.WriteHeader(http.StatusForbidden)
			if r.Method != http.MethodHead {
				_, _ = cw.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`))
			}
		} else {
			h.ServeHTTP(cw, r)
			cw.WriteHeader(http.StatusOK) // a HEAD's, which the handler leaves to the server
		}
		f.mu.Lock()
		f.requests = append(f.requests, S3Request{Method: r.Method, Path: r.URL.Path, Range: r.Header.Get("Range"), Status: cw.status, Bytes: cw.n, Time: arrived})
		f.mu.Unlock()
	}))
	t.Cleanup(f.srv.Close)
	f.URL = f.srv.URL
	if err := f.Backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	for name, data := range objects {
		f.Put(t, bucket, name, data)
	}
	return f
}

// Put stores data under key in bucket, replacing what was there.
func (f *FakeS3) Put(t testing.TB, bucket, key string, data []byte) {
	t.Helper()
	if _, err := f.Backend.PutObject(bucket, key, map[string]string{}, bytes.NewReader(data), int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
}

// PutDir stores every file under dir as prefix/NAME in bucket.
func (f *FakeS3) PutDir(t testing.TB, bucket, prefix, dir string) {
	t.Helper()
	for name, data := range ReadDirFiles(t, dir) {
		f.Put(t, bucket, prefix+"/"+name, data)
	}
}

// Versioned turns versioning on in bucket. Until then the server sends no
// version ids, as S3 does for an unversioned bucket (gofakes3 itself names
// a version of every object).
func (f *FakeS3) Versioned(t testing.TB, bucket string) {
	t.Helper()
	if err := f.Backend.SetVersioningConfiguration(bucket, gofakes3.VersioningConfiguration{Status: gofakes3.VersioningEnabled}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.versioned = true
	f.mu.Unlock()
}

// RequireKey makes the server refuse, with 403 AccessDenied, every request
// not signed with accessKey ("" accepts all again).
func (f *FakeS3) RequireKey(accessKey string) {
	f.mu.Lock()
	f.requireKey = accessKey
	f.mu.Unlock()
}

// DenyVersionReads makes the server refuse, with 403 AccessDenied, every
// read of an object version by id, as S3 does for a caller granted
// s3:GetObject but not s3:GetObjectVersion.
func (f *FakeS3) DenyVersionReads() {
	f.mu.Lock()
	f.denyVersions = true
	f.mu.Unlock()
}

// Throttle answers the next n requests with 503 SlowDown and a
// Retry-After of wait (whole seconds, at least 1), as S3 and the stores
// that speak its protocol slow a client down.
func (f *FakeS3) Throttle(n int, wait time.Duration) {
	f.mu.Lock()
	f.throttled, f.throttleAfter = n, wait
	f.mu.Unlock()
}

// Requests returns the requests served so far.
func (f *FakeS3) Requests() []S3Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]S3Request(nil), f.requests...)
}

// ResetRequests forgets the requests served so far.
func (f *FakeS3) ResetRequests() {
	f.mu.Lock()
	f.requests = nil
	f.mu.Unlock()
}

// Stop closes the server: later requests are refused connections.
func (f *FakeS3) Stop() { f.srv.Close() }

// Env is the environment under which oxefs reaches the server with the
// test key: endpoint, region, credentials, and no instance metadata lookup.
func (f *FakeS3) Env() []string {
	return []string{"AWS_ENDPOINT_URL_S3=" + f.URL, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=" + S3AccessKey, "AWS_SECRET_ACCESS_KEY=" + S3SecretKey,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
}

// Config is an SDK configuration that reaches the server with the test
// key.
func (f *FakeS3) Config() aws.Config {
	return aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(f.URL),
		Credentials:  aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(S3AccessKey, S3SecretKey, "")),
	}
}

// countingWriter counts the status and body bytes of a response, and
// drops its version id header when hideVersion.
type countingWriter struct {
	http.ResponseWriter
	hideVersion bool
	status      int
	wrote       bool // the header is written
	n           int64
}

func (w *countingWriter) WriteHeader(status int) {
	if w.wrote {
		return
	}
	w.wrote, w.status = true, status
	if w.hideVersion {
		w.Header().Del("x-amz-version-id")
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}
