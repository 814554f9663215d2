package storage_test

import (
	"context"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/storage"
	_ "github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/local"
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
	for _, tc := range []struct{ location, want string }{
		{"s3://bucket/x", `unsupported scheme "s3" (valid: gs://… or a local directory)`},
		{"gs://", "no bucket after gs://"},
		{dir + "/nope", "no such directory"},
	} {
		if _, err := storage.Open(ctx, tc.location, storage.Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q): %v, want an error containing %q", tc.location, err, tc.want)
		}
	}
}
