package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/oxefs/oxefs/storage"
)

// credentialsHint is the remedy for credentials that are missing.
const credentialsHint = "give credentials the AWS way (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, " +
	"AWS_PROFILE, or an instance role), or, if the bucket is public, read it without credentials: " +
	"`anonymous: true` on the dataset in the mix config, or --anonymous for inspect"

// transientCodes are the S3 error codes worth retrying whatever their
// HTTP status.
var transientCodes = map[string]bool{
	"SlowDown": true, "Throttling": true, "ThrottlingException": true, "RequestThrottled": true,
	"RequestTimeout": true, "InternalError": true, "ServiceUnavailable": true, "RequestLimitExceeded": true,
}

// classify names the object in err, makes a missing object or bucket match
// fs.ErrNotExist and a refusal fs.ErrPermission, each with what to try,
// and marks the errors worth retrying (see isTransient) as transient.
func (b *Backend) classify(name string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	obj := storage.Object(b, name)
	status, code := statusOf(err), codeOf(err)
	switch {
	case code == "NoSuchBucket":
		return fmt.Errorf("%s: %w: %w; no bucket %q %s: check its name, AWS_REGION, and AWS_ENDPOINT_URL_S3 for an S3-compatible store",
			obj, fs.ErrNotExist, err, b.bucket, b.where())
	case status == http.StatusNotFound || code == "NoSuchKey" || code == "NotFound" || code == "NoSuchVersion":
		return fmt.Errorf("%s: %w: %w", obj, fs.ErrNotExist, err)
	case status == http.StatusForbidden || status == http.StatusUnauthorized:
		return fmt.Errorf("%s: %w: %w; %s", obj, fs.ErrPermission, err, b.permissionHint())
	case status == http.StatusMovedPermanently || code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed":
		if region := bucketRegion(err); region != "" && region != b.region {
			return fmt.Errorf("%s: %w; the bucket is in region %s, not %s: set AWS_REGION=%s", obj, err, region, b.region, region)
		}
		return fmt.Errorf("%s: %w; the bucket is not in region %s: set AWS_REGION to its region", obj, err, b.region)
	}
	wrapped := fmt.Errorf("%s: %w", obj, err)
	if isTransient(err) {
		return storage.TransientAfter(wrapped, retryAfter(err))
	}
	return wrapped
}

// where names the endpoint a request went to, for messages.
func (b *Backend) where() string {
	if b.endpoint != "" {
		return "at " + b.endpoint
	}
	return "in region " + b.region
}

// permissionHint is the remedy for a refused request.
func (b *Backend) permissionHint() string {
	if b.anonymous {
		return "the bucket refuses anonymous reads: drop `anonymous: true` (or --anonymous) and give credentials " +
			"(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or an instance role)"
	}
	return "the credentials may not read it (s3:GetObject on the keys, s3:ListBucket for a missing key's 404); " +
		"check AWS_PROFILE and the keys, or, if the bucket is public, read it without credentials: " +
		"`anonymous: true` on the dataset in the mix config, or --anonymous for inspect"
}

// isTransient reports whether err is worth retrying: HTTP 408, 429 and 5xx,
// S3's throttling and timeout codes, a connection reset, refused or
// aborted, an unexpected EOF, a timeout, a checksum mismatch (read again
// from the start: see storage.ErrChecksum), and a connection closed before
// the response. A missing object and a cancelled context are not.
func isTransient(err error) bool {
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, storage.ErrChecksum), storage.NetworkFault(err):
		return true
	}
	if transientCodes[codeOf(err)] {
		return true
	}
	if s := statusOf(err); s != 0 {
		return s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || (s >= 500 && s < 600)
	}
	// A kept-alive connection the server closed as the request went out.
	if _, ok := errors.AsType[*smithyhttp.RequestSendError](err); ok && errors.Is(err, io.EOF) {
		return true
	}
	return false
}

// statusOf is the HTTP status of an S3 error response, 0 when err is not
// one.
func statusOf(err error) int {
	if re, ok := errors.AsType[*awshttp.ResponseError](err); ok {
		return re.HTTPStatusCode()
	}
	if re, ok := errors.AsType[*smithyhttp.ResponseError](err); ok {
		return re.HTTPStatusCode()
	}
	return 0
}

// isStatus reports whether err is an S3 error response of that status.
func isStatus(err error, status int) bool { return statusOf(err) == status }

// codeOf is the S3 error code ("NoSuchKey", "SlowDown"), "" when err has
// none.
func codeOf(err error) string {
	if ae, ok := errors.AsType[smithy.APIError](err); ok {
		return ae.ErrorCode()
	}
	return ""
}

// retryAfter is the wait an S3 error response asks for (its Retry-After
// header: S3-compatible stores send one with 429 and 503), 0 when none.
func retryAfter(err error) time.Duration {
	if re, ok := errors.AsType[*smithyhttp.ResponseError](err); ok && re.Response != nil {
		return storage.ParseRetryAfter(re.Response.Header.Get("Retry-After"))
	}
	return 0
}

// bucketRegion is the region S3 names in a redirect or a refused
// signature (the x-amz-bucket-region header), "" when it names none.
func bucketRegion(err error) string {
	if re, ok := errors.AsType[*smithyhttp.ResponseError](err); ok && re.Response != nil {
		return re.Response.Header.Get("x-amz-bucket-region")
	}
	return ""
}
