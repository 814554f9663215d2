// Package s3 is the storage backend for a dataset under an Amazon S3 prefix,
// or a prefix of an S3-compatible store (MinIO, Ceph, R2...), read with the
// AWS SDK for Go v2. It owns everything that knows S3: the credential chain
// and the anonymous option, the region and the custom endpoint, the refusal
// of the SDK's own retries (retries are storage/retry's), the pinning of
// reads to one version of an object, and the classification of S3's errors
// (404, 403, 408, 429, 5xx, throttling codes) and network faults.
//
// It registers the URL scheme "s3" ("s3://bucket/prefix"). It imports only
// package storage of oxefs.
//
// # Configuration
//
// Everything comes from the SDK's usual sources (environment, then
// ~/.aws/config and ~/.aws/credentials): credentials through the default
// chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, web
// identity, the instance role), the region from AWS_REGION or the profile
// (us-east-1 when none is set), and an endpoint for an S3-compatible store
// from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (or the profile's
// endpoint_url). With an endpoint, buckets are addressed path-style
// (http://HOST/BUCKET/KEY), which every S3-compatible store serves.
//
// # Versions
//
// Stat names the bytes of an object by its version id (when the bucket is
// versioned) and its ETag, plus the CRC32C that S3 publishes for the whole
// object when it has one (see Version). OpenVersion reads that version by
// its id, or, without one, with If-Match on the ETag, and checks the ETag
// of the response too (some stores ignore If-Match): bytes of another
// upload are never served as the pinned version's.
package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/logging"

	"github.com/oxefs/oxefs/storage"
)

func init() { storage.Register("s3", Open) }

// DefaultRegion is the region of a client for which no region is
// configured: AWS's own default, and what S3-compatible stores accept.
const DefaultRegion = "us-east-1"

// maxIdleConns is how many idle connections to the store a backend keeps.
const maxIdleConns = 256

// Backend is a dataset directory under an S3 prefix.
type Backend struct {
	client    *s3.Client
	bucket    string
	prefix    string
	anonymous bool   // reads without credentials
	endpoint  string // the custom endpoint, "" for AWS's own
	region    string

	// versionReadDenied is set once a read by version id was refused
	// (403): the caller may read objects (s3:GetObject) but not their
	// versions (s3:GetObjectVersion), as on many public buckets; reads are
	// then pinned by ETag alone.
	versionReadDenied atomic.Bool
}

var (
	_ storage.Backend   = (*Backend)(nil)
	_ storage.Versioner = (*Backend)(nil)
)

// Open connects to a location "s3://bucket/prefix".
func Open(ctx context.Context, location string, opts storage.Options) (storage.Backend, error) {
	bucket, prefix, err := storage.SplitBucket(location, "s3")
	if err != nil {
		return nil, err
	}
	return New(ctx, bucket, prefix, opts)
}

// New connects to s3://bucket/prefix with the SDK's default configuration
// (see the package doc). Unless opts.Anonymous, it resolves the credentials
// first, so that a machine without any fails here, with the remedies.
func New(ctx context.Context, bucket, prefix string, opts storage.Options) (*Backend, error) {
	loadOpts := []func(*config.LoadOptions) error{
		// The SDK logs to stderr by default; oxefs logs what it needs itself.
		config.WithLogger(logging.Nop{}),
	}
	if opts.Anonymous {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("s3://%s: AWS configuration: %w", path.Join(bucket, prefix), err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	// The SDK keeps 10 idle connections per host; a cold start reads
	// record headers of up to 128 shards at once.
	cfg.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConns = maxIdleConns
		tr.MaxIdleConnsPerHost = maxIdleConns
	})
	b := NewWithConfig(cfg, bucket, prefix, opts)
	if !opts.Anonymous {
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			return nil, fmt.Errorf("%s: no AWS credentials: %w; %s", b.Location(), err, credentialsHint)
		}
	}
	return b, nil
}

// NewWithConfig reads s3://bucket/prefix through a client made from cfg.
// Retries are storage/retry's, so they are counted, logged and bounded in
// one place: the client makes every request a single attempt. With a
// custom endpoint (cfg.BaseEndpoint, or the environment's), buckets are
// addressed path-style.
func NewWithConfig(cfg aws.Config, bucket, prefix string, opts storage.Options) *Backend {
	b := &Backend{bucket: bucket, prefix: prefix, anonymous: opts.Anonymous, region: cfg.Region}
	b.client = s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.Retryer = aws.NopRetryer{}
		// Checksums are asked for, and checked, on whole-object reads only
		// (see get).
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.DisableLogOutputChecksumValidationSkipped = true
		if o.BaseEndpoint != nil && *o.BaseEndpoint != "" {
			b.endpoint = *o.BaseEndpoint
			o.UsePathStyle = true
		}
	})
	return b
}

// Location returns s3://bucket/prefix.
func (b *Backend) Location() string { return "s3://" + path.Join(b.bucket, b.prefix) }

func (b *Backend) key(name string) string { return path.Join(b.prefix, name) }

// Open streams length bytes of the object from offset off (to its end when
// length < 0) with a ranged GET; an offset at or past the end gives an
// empty stream, as a local file does. Reads stop when ctx is done.
func (b *Backend) Open(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	return b.get(ctx, name, Version{}, off, length)
}

// OpenVersion is Open of the bytes Stat identified by version. A version
// that is gone (the object rewritten or deleted since, in an unversioned
// bucket; the version deleted, in a versioned one) is a
// *storage.VersionError.
func (b *Backend) OpenVersion(ctx context.Context, name, version string, off, length int64) (io.ReadCloser, error) {
	v, err := ParseVersion(version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", storage.Object(b, name), err)
	}
	rc, err := b.get(ctx, name, v, off, length)
	if err != nil && v.ID != "" && isStatus(err, http.StatusForbidden) && !b.versionReadDenied.Load() {
		// Perhaps allowed to read the object but not its versions (a
		// public bucket's policy often grants s3:GetObject alone).
		b.versionReadDenied.Store(true)
		rc, err = b.get(ctx, name, v, off, length)
	}
	if err != nil && (errors.Is(err, fs.ErrNotExist) || isStatus(err, http.StatusPreconditionFailed)) {
		return nil, &storage.VersionError{Object: storage.Object(b, name), Version: version, Err: err}
	}
	return rc, err
}

// get reads length bytes from off of the object, pinned to v when v is not
// zero.
func (b *Backend) get(ctx context.Context, name string, v Version, off, length int64) (io.ReadCloser, error) {
	if length == 0 {
		return http.NoBody, nil
	}
	in := &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(b.key(name))}
	switch {
	case length > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+length-1))
	case off > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
	default:
		// A whole object: the SDK checks the bytes against the checksum S3
		// publishes, if any. Not for a range: S3 sends none for one, and a
		// store that sent the whole object's would fail every range.
		in.ChecksumMode = types.ChecksumModeEnabled
	}
	if v.ETag != "" {
		in.IfMatch = aws.String(`"` + v.ETag + `"`)
	}
	if v.ID != "" && !b.versionReadDenied.Load() {
		in.VersionId = aws.String(v.ID)
	}
	ctx, cancel := context.WithCancel(ctx)
	out, err := b.client.GetObject(ctx, in)
	if err != nil {
		cancel()
		if isStatus(err, http.StatusRequestedRangeNotSatisfiable) {
			// A range that starts at or past the end (of an empty object,
			// too).
			return http.NoBody, nil
		}
		return nil, b.classify(name, err)
	}
	if v.ETag != "" && unquote(aws.ToString(out.ETag)) != v.ETag {
		out.Body.Close()
		cancel()
		// A store that ignores If-Match served another upload's bytes.
		return nil, &storage.VersionError{Object: storage.Object(b, name), Version: v.String(),
			Err: fmt.Errorf("the object's ETag is now %s", aws.ToString(out.ETag))}
	}
	var rc io.ReadCloser = &reader{body: out.Body, ctx: ctx, cancel: cancel, b: b, name: name, off: off}
	if off == 0 && length < 0 {
		if sum, ok := uncheckedMD5(out); ok {
			// No checksum the SDK checks: the ETag of a single-part upload
			// is the MD5 of its bytes.
			rc, _ = storage.CheckWhole(rc, storage.Object(b, name), storage.Checksum{Algorithm: storage.MD5, Sum: sum}, nil)
		}
	}
	return rc, nil
}

// uncheckedMD5 returns the MD5 of a whole object's bytes that its GET
// answer publishes in its ETag, when the SDK checks no checksum of that
// answer (none was sent, or only a multipart upload's composite one). A
// multipart upload's ETag ("HEX-N") and an object encrypted with KMS or a
// customer key (whose ETag is no MD5 of the bytes) publish none.
func uncheckedMD5(out *s3.GetObjectOutput) (string, bool) {
	sdkChecks := out.ChecksumType != types.ChecksumTypeComposite &&
		(out.ChecksumCRC32 != nil || out.ChecksumCRC32C != nil || out.ChecksumCRC64NVME != nil ||
			out.ChecksumSHA1 != nil || out.ChecksumSHA256 != nil)
	etag := unquote(aws.ToString(out.ETag))
	if sdkChecks || !isMD5(etag) || out.SSECustomerAlgorithm != nil ||
		out.ServerSideEncryption == types.ServerSideEncryptionAwsKms || out.ServerSideEncryption == types.ServerSideEncryptionAwsKmsDsse {
		return "", false
	}
	return strings.ToLower(etag), true
}

// reader is an object stream that stops at its context and classifies
// the errors of its body.
type reader struct {
	body   io.ReadCloser
	ctx    context.Context
	cancel context.CancelFunc
	b      *Backend
	name   string
	off    int64 // offset of the next byte
}

func (r *reader) Read(p []byte) (int, error) {
	// A cancelled context closes the connection asynchronously; bytes
	// already received would still be read until then. Stop here, as a
	// local file does.
	if err := r.ctx.Err(); err != nil {
		return 0, r.b.classify(r.name, err)
	}
	n, err := r.body.Read(p)
	r.off += int64(n)
	switch {
	case err == nil || err == io.EOF:
		return n, err
	case strings.Contains(err.Error(), "checksum did not match"):
		// The SDK's check of a whole object's published checksum.
		err = fmt.Errorf("%w: %w", storage.ErrChecksum, err)
	}
	return n, r.b.classify(r.name, fmt.Errorf("at byte %d: %w", r.off, err))
}

func (r *reader) Close() error {
	err := r.body.Close()
	r.cancel()
	return err
}

// Stat identifies the object by its version id (in a versioned bucket),
// its ETag and the whole-object CRC32C that S3 publishes, when it does.
func (b *Backend) Stat(ctx context.Context, name string) (storage.ObjectInfo, error) {
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket:       aws.String(b.bucket),
		Key:          aws.String(b.key(name)),
		ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		return storage.ObjectInfo{}, b.classify(name, err)
	}
	v := Version{ETag: unquote(aws.ToString(out.ETag))}
	if id := aws.ToString(out.VersionId); id != "null" {
		// "null" is the id of an object written while versioning was off or
		// suspended: a later write replaces it, so it pins nothing.
		v.ID = id
	}
	if out.ChecksumType != types.ChecksumTypeComposite {
		v.CRC32C = crc32cHex(aws.ToString(out.ChecksumCRC32C))
	}
	if isMD5(v.ETag) && out.ServerSideEncryption != types.ServerSideEncryptionAwsKms &&
		out.ServerSideEncryption != types.ServerSideEncryptionAwsKmsDsse && out.SSECustomerAlgorithm == nil {
		v.MD5 = v.ETag
	}
	info := storage.ObjectInfo{Size: aws.ToInt64(out.ContentLength), Version: v.String()}
	// What the disk cache checks a whole copy against: the CRC32C of the
	// whole object, else a single-part upload's ETag, its MD5.
	switch {
	case v.CRC32C != "":
		info.Checksum = storage.Checksum{Algorithm: storage.CRC32C, Sum: v.CRC32C}
	case v.MD5 != "":
		info.Checksum = storage.Checksum{Algorithm: storage.MD5, Sum: strings.ToLower(v.MD5)}
	}
	return info, nil
}

func unquote(etag string) string { return strings.Trim(etag, `"`) }
