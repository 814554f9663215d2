package retry

import (
	"bytes"
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/storage"
	_ "github.com/oxefs/oxefs/storage/hf"
	_ "github.com/oxefs/oxefs/storage/s3"
)

// TestRefusedRetriedOnce: a connection refused, on every scheme, is
// retried once (a server restarting) and then given up on: two attempts,
// counted by the error and by the statistics, whatever the budget
// (MaxElapsed here is a minute, which only a refusal can cut short). The
// error names the object and wraps ECONNREFUSED. Fetch and Stat alike.
func TestRefusedRetriedOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connections are refused
	for _, tc := range []struct {
		scheme, location string
		env              map[string]string
	}{
		{"gs", "gs://robotics/ds", map[string]string{"STORAGE_EMULATOR_HOST": addr}},
		{"s3", "s3://robotics/ds", map[string]string{"AWS_ENDPOINT_URL_S3": "http://" + addr, "AWS_REGION": "us-east-1",
			"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}},
		{"hf", "hf://datasets/oxe/ds", map[string]string{"HF_ENDPOINT": "http://" + addr, "HF_TOKEN": ""}},
	} {
		t.Run(tc.scheme, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			src, err := storage.Open(context.Background(), tc.location, storage.Options{Anonymous: true})
			if err != nil {
				t.Fatal(err)
			}
			policy := Policy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, MaxElapsed: time.Minute, StallTimeout: time.Minute}
			for _, op := range []struct {
				name string
				call func(*Backend) error
			}{
				{"fetch", func(b *Backend) error {
					_, err := b.Fetch(context.Background(), "meta/info.json", new(bytes.Buffer))
					return err
				}},
				{"stat", func(b *Backend) error {
					_, err := b.Stat(context.Background(), "meta/info.json")
					return err
				}},
			} {
				stats := new(Stats)
				err := op.call(New(src, policy, stats, nil))
				ue, ok := errors.AsType[*storage.UnavailableError](err)
				if !ok || !errors.Is(err, syscall.ECONNREFUSED) || ue.Name != "meta/info.json" {
					t.Fatalf("%s: %v; want an *storage.UnavailableError for meta/info.json wrapping ECONNREFUSED", op.name, err)
				}
				if ue.Attempts != 2 || stats.Retries.Load() != 1 {
					t.Errorf("%s: gave up after %d attempts, %d retries; want 2 attempts, 1 retry", op.name, ue.Attempts, stats.Retries.Load())
				}
			}
		})
	}
}
