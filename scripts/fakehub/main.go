// Command fakehub serves a directory tree as one Hugging Face Hub dataset
// repository on loopback, for measuring oxefs against a remote Hub
// offline, or trying hf:// sources without the internet:
//
//	go run ./scripts/fakehub -dir /data/synth -repo oxe/synth -port 4480 &
//	HF_ENDPOINT=http://127.0.0.1:4480 oxefs inspect hf://datasets/oxe/synth/NAME/1.0.0
//
// Files are named by their path below -dir, at the branch "main"; those of
// -lfs bytes or more are LFS files, redirected to a second port as the Hub
// redirects to its CDN. -latency delays every answer and -rate caps the
// bytes per second of all answers together, as scripts/fakegcs does. The
// files are held in memory. It is a development tool, built on the fake Hub
// the tests use (internal/testkit/fakehub).
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/oxefs/oxefs/internal/bytesize"
	"github.com/oxefs/oxefs/internal/testkit/fakehub"
)

func main() {
	dir := flag.String("dir", "", "directory to serve as the repository")
	repo := flag.String("repo", "oxe/synth", "the repository, OWNER/NAME")
	port := flag.Uint("port", 4480, "port on 127.0.0.1 (the storage host takes another)")
	latency := flag.Duration("latency", 0, "delay before every answer, e.g. 30ms")
	rateText := flag.String("rate", "0", "cap on bytes per second of all answers together, e.g. 10MB; 0: no cap")
	lfs := flag.Int64("lfs", 1<<20, "size in bytes from which a file is an LFS file")
	verbose := flag.Bool("v", false, "on exit, print every request answered")
	flag.Parse()
	if *dir == "" {
		log.Fatal("-dir is required")
	}
	rate, err := bytesize.Parse(*rateText)
	if err != nil {
		log.Fatalf("-rate: %v", err)
	}
	files := map[string][]byte{}
	err = filepath.WalkDir(*dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(*dir, p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	hub, err := fakehub.Listen(fmt.Sprintf("127.0.0.1:%d", *port), fakehub.Options{LFSThreshold: *lfs, Latency: *latency, Rate: rate})
	if err != nil {
		log.Fatal(err)
	}
	commit := hub.Commit(*repo, "main", files)
	fmt.Printf("serving %d files of %s as hf://datasets/%s (commit %s) at %s (HF_ENDPOINT=%s), latency %s, rate %s/s\n",
		len(files), *dir, *repo, commit, hub.URL(), hub.URL(), *latency, *rateText)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	hub.Close()
	var n, bytes int64
	for _, r := range hub.Requests() {
		n++
		bytes += r.Bytes
		if *verbose {
			fmt.Printf("%s %s %s %s %q %d %d\n", r.Time.Format("15:04:05.000"), r.Host, r.Method, r.Path, r.Range, r.Status, r.Bytes)
		}
	}
	fmt.Printf("answered %d requests, %d body bytes\n", n, bytes)
}
