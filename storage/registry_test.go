package storage_test

import (
	"context"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/storage"
	_ "github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/storage/s3"
)

func TestOpenPicksByScheme(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.(*local.Backend); !ok || b.Location() != dir {
		t.Errorf("Open(%q) = %T at %q, want the local backend there", dir, b, b.Location())
	}
	b, err = storage.Open(ctx, "s3://bucket/a/b/", storage.Options{Anonymous: true})
	if _, ok := b.(*s3.Backend); !ok || err != nil || b.Location() != "s3://bucket/a/b" {
		t.Errorf("Open(s3://bucket/a/b/) = %T, %v; want the S3 backend at s3://bucket/a/b", b, err)
	}
	for _, tc := range []struct{ location, want string }{
		{"az://bucket/x", `unsupported scheme "az" (valid: gs://… or s3://… or a local directory)`},
		{"gs://", "no bucket after gs://"},
		{"s3://", "no bucket after s3://"},
		{dir + "/nope", "no such directory"},
	} {
		if _, err := storage.Open(ctx, tc.location, storage.Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q): %v, want an error containing %q", tc.location, err, tc.want)
		}
	}
}
