package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"
)

// GCS is a dataset directory under a Google Cloud Storage prefix, read with
// the official client. Credentials come from the environment (application
// default credentials) unless the source is anonymous; STORAGE_EMULATOR_HOST
// is honoured by the client.
type GCS struct {
	client *storage.Client
	bucket string
	prefix string
}

var _ Source = (*GCS)(nil)

// NewGCS connects to gs://bucket/prefix.
func NewGCS(ctx context.Context, bucket, prefix string, opts OpenSourceOptions) (*GCS, error) {
	var copts []option.ClientOption
	if opts.Anonymous {
		copts = append(copts, option.WithoutAuthentication())
	}
	client, err := storage.NewClient(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("gs://%s/%s: %w", bucket, prefix, err)
	}
	return NewGCSWithClient(client, bucket, prefix), nil
}

// NewGCSWithClient reads gs://bucket/prefix through an existing client.
// Retries are oxefs's own (see Fetch), so the client's are switched off.
func NewGCSWithClient(client *storage.Client, bucket, prefix string) *GCS {
	client.SetRetry(storage.WithPolicy(storage.RetryNever))
	return &GCS{client: client, bucket: bucket, prefix: prefix}
}

// URI returns gs://bucket/prefix.
func (g *GCS) URI() string { return "gs://" + path.Join(g.bucket, g.prefix) }

func (g *GCS) object(name string) *storage.ObjectHandle {
	return g.client.Bucket(g.bucket).Object(path.Join(g.prefix, name))
}

// Open streams the object from offset off.
func (g *GCS) Open(ctx context.Context, name string, off int64) (io.ReadCloser, error) {
	r, err := g.object(name).NewRangeReader(ctx, off, -1)
	if err != nil {
		return nil, gcsError(err)
	}
	return r, nil
}

// Size returns the object's size.
func (g *GCS) Size(ctx context.Context, name string) (int64, error) {
	attrs, err := g.object(name).Attrs(ctx)
	if err != nil {
		return 0, gcsError(err)
	}
	return attrs.Size, nil
}

// gcsError makes a missing object match fs.ErrNotExist.
func gcsError(err error) error {
	if errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist) {
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return err
}
