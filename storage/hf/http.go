package hf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/oxefs/oxefs/storage"
)

// The classes of the Hub's refusals, matched with errors.Is.
var (
	// ErrAccess matches a request the Hub refused for want of a token (or
	// of a token with access: a gated or private repository).
	ErrAccess = errors.New("access refused")
	// ErrRepoNotFound matches a dataset repository the Hub does not know.
	ErrRepoNotFound = errors.New("repository not found")
	// ErrRevisionNotFound matches a revision the repository does not have.
	ErrRevisionNotFound = errors.New("revision not found")
)

// send makes one request, following no redirect: with the token only when
// u is on the endpoint's origin, so that a redirect to an LFS storage host
// never carries it. A transport failure is transient unless ctx is done.
func (b *Backend) send(ctx context.Context, method string, u *url.URL, rng string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Location(), err)
	}
	// Bytes as stored: a compressed answer has another length, and ranges
	// would count in it.
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("User-Agent", "oxefs")
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	if b.token != "" && sameOrigin(u, b.endpoint) {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	resp, err := b.client.Do(req)
	if err == nil {
		return resp, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// The transport's error names the URL: an LFS redirect's carries a
	// signature in its query, which messages do not need.
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	return nil, transportError(fmt.Errorf("%s %s: %w", method, redactURL(u.String()), err))
}

// transportError classifies an error of the transport (no answer at all).
func transportError(err error) error {
	// A host that does not resolve (no such host, no network to ask) will
	// not resolve on a retry either: it fails at once, as gs:// and s3://
	// do. A DNS failure the resolver calls temporary or a timeout is
	// retried.
	if de, ok := errors.AsType[*net.DNSError](err); ok && !de.IsTemporary && !de.IsTimeout {
		return err
	}
	// Whatever else the transport meets (a reset or refused connection, a
	// timeout, a TLS handshake cut short) is worth another try within the
	// retry budget.
	return storage.Transient(err)
}

// sameOrigin reports whether u is on the origin (scheme, host and port)
// of base.
func sameOrigin(u, base *url.URL) bool {
	return u.Scheme == base.Scheme && strings.EqualFold(u.Host, base.Host)
}

// noRedirect makes a client hand every redirect to the Backend.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// statusError is the error of an answer of the Hub that is neither bytes
// nor a redirect, for the named object ("" for the revision itself),
// naming the remedy: a missing file matches fs.ErrNotExist; 429, 408 and
// 5xx are transient, after the server's Retry-After; a missing repository
// or revision and a refusal (a *RefusalError) say what to try.
func (b *Backend) statusError(resp *http.Response, name string) error {
	code := resp.Header.Get("X-Error-Code")
	said := "HTTP " + resp.Status + b.serverMessage(resp)
	what := b.Location()
	if name != "" {
		what = storage.Object(b, name)
	}
	hub := redactURL(b.endpoint.String())
	switch {
	case code == "RepoNotFound" || (name == "" && resp.StatusCode == http.StatusNotFound && code == ""):
		return &RefusalError{Kind: ErrRepoNotFound, Where: b.Location(), Said: said,
			What: fmt.Sprintf("dataset repository %s not found on %s", b.repo, hub),
			Remedy: fmt.Sprintf("check OWNER/NAME against the dataset's page (%s/datasets/%s); "+
				"a private repository needs a token: set HF_TOKEN or run `huggingface-cli login`", hub, b.repo)}
	case code == "RevisionNotFound":
		return &RefusalError{Kind: ErrRevisionNotFound, Where: b.Location(), Said: said,
			What: fmt.Sprintf("revision %q not found in %s", b.revisionName(), b.repo),
			Remedy: fmt.Sprintf("name a branch, tag or commit of the repository after @ (%s; default %s, refs/pr/N written refs%%2Fpr%%2FN)",
				Syntax, DefaultRevision)}
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s: %s", fs.ErrNotExist, what, said)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		sent := "no token was sent"
		switch {
		case b.token != "":
			sent = "the token sent was refused"
		case b.anonymous:
			sent = "no token was sent: the source is read anonymously (anonymous: true, or --anonymous), whatever HF_TOKEN says"
		}
		return &RefusalError{Kind: ErrAccess, Where: what, Said: said,
			What: fmt.Sprintf("access to %s refused (%s)", b.repo, sent),
			Remedy: fmt.Sprintf("set HF_TOKEN or run `huggingface-cli login`; the repo may be gated "+
				"(accept its conditions on %s/datasets/%s with the token's account)", hub, b.repo)}
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return storage.TransientAfter(fmt.Errorf("%s: %s", what, said), storage.ParseRetryAfter(resp.Header.Get("Retry-After")))
	}
	return fmt.Errorf("%s: %s", what, said)
}

// RefusalError is a request the Hub refused for a reason its user can
// fix: a missing repository or revision, or a token wanted.
type RefusalError struct {
	Kind   error  // ErrRepoNotFound, ErrRevisionNotFound or ErrAccess
	Where  string // the location or object
	What   string // what was refused, in words
	Said   string // the Hub's answer: status and message
	Remedy string // what to try
}

func (e *RefusalError) Error() string {
	return fmt.Sprintf("%s: %s (%s); %s", e.Where, e.What, e.Said, e.Remedy)
}

// Is makes errors.Is(err, e.Kind) true.
func (e *RefusalError) Is(target error) bool { return target == e.Kind }

// storageError is the error of an answer of an LFS storage host (a
// redirect's target): its refusal is most often a signed URL that expired
// while the request waited, worth a new redirect.
func (b *Backend) storageError(resp *http.Response, name string) error {
	err := fmt.Errorf("%s: HTTP %s from the file's storage host %s", storage.Object(b, name), resp.Status, resp.Request.URL.Host)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return err
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests ||
		resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return storage.TransientAfter(err, storage.ParseRetryAfter(resp.Header.Get("Retry-After")))
	}
	return err
}

// serverMessage is what the Hub said of its refusal (X-Error-Message, or
// the "error" of a JSON body), as ": MESSAGE" with the token removed, or
// "".
func (b *Backend) serverMessage(resp *http.Response) string {
	msg := resp.Header.Get("X-Error-Message")
	if msg == "" && resp.Body != nil {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil {
			msg = e.Error
		}
	}
	msg = strings.TrimSpace(b.redact(msg))
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// redact removes the token from text that came from the server.
func (b *Backend) redact(s string) string {
	if b.token == "" {
		return s
	}
	return strings.ReplaceAll(s, b.token, "[token]")
}

// redactURL drops a URL's user information and query, which may hold
// credentials or signatures.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(an unparsable URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	return u.String()
}
