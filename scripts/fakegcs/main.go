// Command fakegcs serves a directory tree as a Google Cloud Storage bucket
// on loopback, for measuring oxefs against a remote source offline:
//
//	go run ./scripts/fakegcs -dir /data/synth -bucket synth -port 4443 &
//	STORAGE_EMULATOR_HOST=127.0.0.1:4443 oxefs mount ... # sources gs://synth/NAME/1.0.0
//
// Objects are named by their path below -dir. It is a development tool,
// built on the same fake-gcs-server the tests use.
//
// To make a remote cost what it costs on GCS, -latency delays every
// request (metadata and object reads alike) before its response starts, as
// a round trip to GCS does, and -rate caps the bytes per second of all
// responses together, so the bandwidth bound is the server's and not only
// the client's --max-fetch-rate:
//
//	fakegcs -dir /data/synth -latency 30ms -rate 10MB
//
// To try what a flaky proxy or middlebox does, -flip N inverts one byte of
// every Nth response that carries an object's bytes (not the metadata
// answers), at a position that changes from one to the next:
//
//	fakegcs -dir /data/synth -flip 5
//
// The objects are held in memory unless -store names a directory: then
// fake-gcs-server keeps them there, for data sets larger than memory, and
// a later run with the same -store reuses the objects whose source file has
// not changed (size and modification time) instead of copying them again.
//
// With -s3 it serves the tree as an S3 bucket instead (gofakes3, the
// server the tests use, objects in memory; -store does not apply), behind
// the same latency and rate:
//
//	fakegcs -s3 -dir /data/synth -latency 30ms -rate 10MB &
//	AWS_ENDPOINT_URL_S3=http://127.0.0.1:4443 oxefs mount ... # sources s3://synth/NAME/1.0.0
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/oxefs/oxefs/storage/ratelimit"
)

func main() {
	dir := flag.String("dir", "", "directory to serve")
	bucket := flag.String("bucket", "synth", "bucket name")
	port := flag.Uint("port", 4443, "port on 127.0.0.1")
	latency := flag.Duration("latency", 0, "delay before every response, e.g. 30ms: a round trip to GCS")
	rateText := flag.String("rate", "0", "cap on bytes per second of all responses together, e.g. 10MB (MB = 10^6 bytes); 0: no cap")
	store := flag.String("store", "", "keep the objects in this directory instead of memory (reused by later runs)")
	asS3 := flag.Bool("s3", false, "serve an S3 bucket (gofakes3, in memory) instead of a GCS one")
	flipEvery := flag.Int("flip", 0, "invert one byte of every Nth response carrying object bytes; 0: none")
	flag.Parse()
	if *dir == "" {
		log.Fatal("-dir is required")
	}
	rate, err := parseRate(*rateText)
	if err != nil {
		log.Fatal(err)
	}
	var h http.Handler
	var n int
	stop := func() {}
	if *asS3 {
		if h, n, err = openS3(*dir, *bucket); err != nil {
			log.Fatal(err)
		}
	} else {
		srv, count, err := open(*dir, *bucket, *store, fmt.Sprintf("http://127.0.0.1:%d", *port))
		if err != nil {
			log.Fatal(err)
		}
		h, n, stop = srv.HTTPHandler(), count, srv.Stop
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Handler: slow(flip(h, *flipEvery), *latency, ratelimit.NewLimiter(rate))}
	go func() {
		if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	if *asS3 {
		fmt.Printf("serving %d objects of %s as s3://%s at http://%s (AWS_ENDPOINT_URL_S3=http://%s), latency %s, rate %s/s, flip every %d\n",
			n, *dir, *bucket, l.Addr(), l.Addr(), *latency, *rateText, *flipEvery)
	} else {
		fmt.Printf("serving %d objects of %s as gs://%s at http://%s (STORAGE_EMULATOR_HOST=%s), latency %s, rate %s/s, flip every %d\n",
			n, *dir, *bucket, l.Addr(), l.Addr(), *latency, *rateText, *flipEvery)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	hs.Close()
	stop()
}

// openS3 returns a gofakes3 handler holding every file under dir as an
// object of bucket, in memory, and the number of objects.
func openS3(dir, bucket string) (http.Handler, int, error) {
	mem := s3mem.New()
	if err := mem.CreateBucket(bucket); err != nil {
		return nil, 0, err
	}
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		n++
		_, err = mem.PutObject(bucket, filepath.ToSlash(rel), map[string]string{}, f, st.Size(), nil)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("serving %s: %w", dir, err)
	}
	return gofakes3.New(mem, gofakes3.WithLogger(gofakes3.DiscardLog())).Server(), n, nil
}

// sourceKey is the object metadata that records which source file an
// object in -store was copied from, so that a later run can reuse it.
const sourceKey = "fakegcs-source"

// open starts a listener-less fake server holding every file under dir as
// an object of bucket, in memory or, with store, in that directory. It
// returns the server and the number of objects.
func open(dir, bucket, store, url string) (*fakestorage.Server, int, error) {
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		StorageRoot: store, NoListener: true, Scheme: "http", Host: "127.0.0.1",
		// The client reads objects through the XML API at
		// http://HOST/BUCKET/OBJECT; the fake server routes that path only
		// for its public host.
		PublicHost: "127.0.0.1", ExternalURL: url,
	})
	if err != nil {
		return nil, 0, err
	}
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	n := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		n++
		source := strconv.FormatInt(st.Size(), 10) + "@" + strconv.FormatInt(st.ModTime().UnixNano(), 10)
		if old, err := srv.GetObjectStreaming(bucket, name); err == nil {
			old.Close()
			if old.Metadata[sourceKey] == source {
				return nil
			}
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return srv.CreateObjectStreaming(fakestorage.StreamingObject{
			ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: name, Metadata: map[string]string{sourceKey: source}},
			Content:     f,
		})
	})
	if err != nil {
		srv.Stop()
		return nil, 0, fmt.Errorf("serving %s: %w", dir, err)
	}
	return srv, n, nil
}

// slow delays every request by latency before h sees it, and paces the
// bytes of every response through lim (nil: no cap) before they are
// written.
func slow(h http.Handler, latency time.Duration, lim *ratelimit.Limiter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if latency > 0 {
			t := time.NewTimer(latency)
			select {
			case <-r.Context().Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		if lim != nil {
			w = &pacedWriter{ResponseWriter: w, ctx: r.Context(), lim: lim}
		}
		h.ServeHTTP(w, r)
	})
}

// flip inverts one byte of every nth response that carries object bytes
// (GET /BUCKET/OBJECT, the client's XML API read; not the JSON API's
// metadata under /storage/v1/); n ≤ 0 flips nothing. The byte flipped is
// the kth of the body for the kth such response counted (mod 251), so
// that a range read again comes right or damaged elsewhere.
func flip(h http.Handler, n int) http.Handler {
	if n <= 0 {
		return h
	}
	var count atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/storage/v1/") {
			if k := count.Add(1); k%int64(n) == 0 {
				w = &flipWriter{ResponseWriter: w, at: k % 251}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// flipWriter writes a body with the bits of its byte at inverted.
type flipWriter struct {
	http.ResponseWriter
	at, pos int64
}

func (w *flipWriter) Write(p []byte) (int, error) {
	if w.at >= w.pos && w.at < w.pos+int64(len(p)) {
		p = bytes.Clone(p)
		p[w.at-w.pos] ^= 0xff
	}
	w.pos += int64(len(p))
	return w.ResponseWriter.Write(p)
}

// Flush passes a flush through, for handlers that stream.
func (w *flipWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// paceChunk is the most bytes written at once by a pacedWriter, so that a
// large write is spread over time rather than sent in one burst.
const paceChunk = 32 << 10

// pacedWriter waits on a shared limiter before each chunk it writes.
type pacedWriter struct {
	http.ResponseWriter
	ctx context.Context
	lim *ratelimit.Limiter
}

func (w *pacedWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), paceChunk)]
		if err := w.lim.Wait(w.ctx, len(chunk)); err != nil {
			return written, err
		}
		n, err := w.ResponseWriter.Write(chunk)
		written += n
		if err != nil {
			return written, err
		}
		p = p[len(chunk):]
	}
	return written, nil
}

// Flush passes a flush through, for handlers that stream.
func (w *pacedWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// parseRate reads a byte rate: a number of bytes, or one with a decimal
// (KB, MB, GB) or binary (KiB, MiB, GiB) unit, as oxefs --max-fetch-rate
// reads it.
func parseRate(text string) (int64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"b", 1}}
	t := strings.ToLower(strings.TrimSpace(text))
	mult := 1.0
	for _, u := range units {
		if s, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(s), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("-rate %q: want a byte rate such as 10MB, 512KiB or 1048576", text)
	}
	return int64(f * mult), nil
}
