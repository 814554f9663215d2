// Command fakegcs serves a directory tree as a Google Cloud Storage bucket
// on loopback, for measuring oxefs against a remote source offline:
//
//	go run ./scripts/fakegcs -dir /data/synth -bucket synth -port 4443 &
//	STORAGE_EMULATOR_HOST=127.0.0.1:4443 oxefs mount ... # sources gs://synth/NAME/1.0.0
//
// Objects are named by their path below -dir. It is a development tool,
// built on the same fake-gcs-server the tests use.
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

func main() {
	dir := flag.String("dir", "", "directory to serve")
	bucket := flag.String("bucket", "synth", "bucket name")
	port := flag.Uint("port", 4443, "port on 127.0.0.1")
	flag.Parse()
	if *dir == "" {
		log.Fatal("-dir is required")
	}
	var objects []fakestorage.Object
	err := filepath.WalkDir(*dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(*dir, p)
		objects = append(objects, fakestorage.Object{
			ObjectAttrs: fakestorage.ObjectAttrs{BucketName: *bucket, Name: filepath.ToSlash(rel)},
			Content:     b,
		})
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		InitialObjects: objects, Scheme: "http", Host: "127.0.0.1", Port: uint16(*port), PublicHost: "127.0.0.1",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("serving %d objects of %s as gs://%s at %s (STORAGE_EMULATOR_HOST=127.0.0.1:%d)\n", len(objects), *dir, *bucket, srv.URL(), *port)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	srv.Stop()
}
