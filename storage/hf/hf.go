// Package hf is the storage backend for a dataset in a Hugging Face Hub
// dataset repository, read through the Hub's HTTP API with net/http alone.
// It owns everything that knows the Hub: the hf:// location syntax, the
// endpoint (HF_ENDPOINT), the token and where it is looked for, the pinning
// of every read to one commit, the redirects of LFS files to their storage
// host, and the classification of the Hub's answers (429 and 5xx transient,
// with the server's Retry-After; 401 and 403 a token to set; a missing
// repository, revision or file).
//
// A location is
//
//	hf://datasets/OWNER/NAME[@REVISION][/PATH]
//
// as huggingface_hub's HfFileSystem writes it: REVISION is a branch, a tag
// or a commit (default "main"; one holding a slash, such as refs/pr/1, is
// written escaped: refs%2Fpr%2F1), PATH a folder of the repository that
// holds the dataset. The revision is resolved to a commit when the backend
// first reads (not when it is made, so that offline mode, which never
// reads, never contacts the Hub), and every read from then on names that
// commit: a branch that moves mid-run never mixes two versions of a
// dataset.
//
// It registers the URL scheme "hf". It imports only package storage of
// oxefs.
package hf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/oxefs/oxefs/storage"
)

func init() { storage.Register("hf", Open) }

// DefaultEndpoint is the Hub that HF_ENDPOINT replaces.
const DefaultEndpoint = "https://huggingface.co"

// DefaultRevision is the branch read when a location names none.
const DefaultRevision = "main"

// Syntax is the form of a location, for messages.
const Syntax = "hf://datasets/OWNER/NAME[@REVISION][/PATH]"

// Config says which repository, revision and folder a Backend reads, where,
// and as whom.
type Config struct {
	// Endpoint is the Hub's base URL (DefaultEndpoint when empty).
	Endpoint string
	// Repo is the dataset repository, "OWNER/NAME".
	Repo string
	// Revision is a branch, tag or commit (DefaultRevision when empty).
	Revision string
	// Prefix is the folder of the repository that holds the dataset
	// ("" for its root).
	Prefix string
	// Token, when not empty, is sent to the endpoint (never to another
	// host) as a bearer token.
	Token string
	// Anonymous says the token was left out on purpose (`anonymous: true`),
	// for messages.
	Anonymous bool
	// Client makes the requests; nil for one shared by every Backend. Its
	// redirects are followed by the Backend itself (see Open).
	Client *http.Client
}

// Backend is a dataset folder of a Hub dataset repository at one commit.
type Backend struct {
	// constants
	endpoint  *url.URL
	repo      string
	revision  string // as the location gives it, "" for the default
	prefix    string
	token     string
	anonymous bool
	client    *http.Client

	pin *pin // the revision's commit, shared by the backends Open made for it

	// mutable state
	redirMu   sync.Mutex
	redirects map[string]redirect // guarded by redirMu: LFS files' storage URLs, by name
}

var (
	_ storage.Backend   = (*Backend)(nil)
	_ storage.Versioner = (*Backend)(nil)
)

// sharedClient makes the requests of every Backend that brings no client
// of its own: one connection pool for all the datasets of a mix. It never
// follows a redirect by itself (see Backend.get).
var sharedClient = &http.Client{
	Transport: func() http.RoundTripper {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		return t
	}(),
	CheckRedirect: noRedirect,
}

// Open reads a location (see Syntax). The endpoint is HF_ENDPOINT's, the
// token HF_TOKEN's or the token file's (see Token) unless opts is
// anonymous. It makes no request. The backends Open makes for one
// revision of one repository share its commit (see sharedPin); New makes
// a backend that resolves its own.
func Open(ctx context.Context, location string, opts storage.Options) (storage.Backend, error) {
	repo, rev, prefix, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	cfg := Config{Endpoint: os.Getenv("HF_ENDPOINT"), Repo: repo, Revision: rev, Prefix: prefix, Anonymous: opts.Anonymous}
	if !opts.Anonymous {
		if cfg.Token, err = Token(); err != nil {
			return nil, fmt.Errorf("source %q: %w", location, err)
		}
	}
	b, err := New(cfg)
	if err != nil {
		return nil, err
	}
	b.pin = sharedPin(b.endpoint.String() + " " + b.repo + "@" + b.revisionName())
	return b, nil
}

// pin is the commit a revision resolved to, once it is.
type pin struct {
	mu     sync.Mutex // held while resolving
	commit string     // guarded by mu
}

var (
	pinsMu sync.Mutex
	pins   = map[string]*pin{} // guarded by pinsMu: by endpoint, repository and revision
)

// sharedPin returns the process's pin of a revision: every source that
// Open makes for one endpoint, repository and revision (two datasets of a
// mix reading one repository, say) reads the commit the first of them
// resolved, for the life of the process.
func sharedPin(key string) *pin {
	pinsMu.Lock()
	defer pinsMu.Unlock()
	p := pins[key]
	if p == nil {
		p = new(pin)
		pins[key] = p
	}
	return p
}

// ParseLocation splits a location (see Syntax) into its repository
// ("OWNER/NAME"), revision ("" when it names none) and folder.
func ParseLocation(location string) (repo, revision, prefix string, err error) {
	bad := func(why string) error {
		return fmt.Errorf("source %q: %s; want %s (for example hf://datasets/lerobot/pusht@v3.0)", location, why, Syntax)
	}
	rest, ok := strings.CutPrefix(location, "hf://")
	if !ok {
		return "", "", "", bad("not an hf:// location")
	}
	kind, rest, _ := strings.Cut(rest, "/")
	switch kind {
	case "datasets":
	case "models", "spaces":
		return "", "", "", bad("oxefs reads dataset repositories, not " + kind)
	default:
		return "", "", "", bad(fmt.Sprintf("%q is not a repository kind (valid: datasets)", kind))
	}
	parts := strings.SplitN(strings.Trim(rest, "/"), "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return "", "", "", bad("no OWNER/NAME after hf://datasets/")
	}
	owner, name := parts[0], parts[1]
	if name, revision, ok = strings.Cut(name, "@"); ok {
		if revision, err = url.PathUnescape(revision); err != nil || revision == "" {
			return "", "", "", bad("empty or badly escaped revision after @")
		}
	}
	if !validName.MatchString(owner) || !validName.MatchString(name) {
		return "", "", "", bad(fmt.Sprintf("%q is not a repository id", owner+"/"+name))
	}
	if len(parts) == 3 {
		prefix = strings.Trim(path.Clean("/"+parts[2]), "/")
	}
	return owner + "/" + name, revision, prefix, nil
}

// validName is what the Hub accepts as an owner or a repository name.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// New makes the backend cfg describes. It makes no request.
func New(cfg Config) (*Backend, error) {
	ep := cfg.Endpoint
	if ep == "" {
		ep = DefaultEndpoint
	}
	u, err := url.Parse(strings.TrimRight(ep, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("hub endpoint %q (HF_ENDPOINT): not an http(s) URL such as %s", redactURL(ep), DefaultEndpoint)
	}
	client := sharedClient
	if cfg.Client != nil {
		c := *cfg.Client
		c.CheckRedirect = noRedirect
		client = &c
	}
	return &Backend{
		pin:       new(pin),
		endpoint:  u,
		repo:      cfg.Repo,
		revision:  cfg.Revision,
		prefix:    strings.Trim(cfg.Prefix, "/"),
		token:     strings.TrimSpace(cfg.Token),
		anonymous: cfg.Anonymous,
		client:    client,
	}, nil
}

// Location returns hf://datasets/OWNER/NAME[@REVISION][/PATH], the
// revision as the location named it.
func (b *Backend) Location() string {
	loc := "hf://datasets/" + b.repo
	if b.revision != "" {
		loc += "@" + url.PathEscape(b.revision)
	}
	if b.prefix != "" {
		loc += "/" + b.prefix
	}
	return loc
}

// revisionName is the revision the backend reads, for requests and
// messages.
func (b *Backend) revisionName() string {
	if b.revision == "" {
		return DefaultRevision
	}
	return b.revision
}

// Commit returns the commit every read names: the revision's, resolved by
// the first call (GET /api/datasets/REPO/revision/REVISION) and kept.
func (b *Backend) Commit(ctx context.Context) (string, error) {
	b.pin.mu.Lock()
	defer b.pin.mu.Unlock()
	if b.pin.commit != "" {
		return b.pin.commit, nil
	}
	owner, name, _ := strings.Cut(b.repo, "/")
	u := b.url("api", "datasets", owner, name, "revision", b.revisionName())
	resp, err := b.send(ctx, http.MethodGet, u, "")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", b.statusError(resp, "")
	}
	var info struct {
		SHA string `json:"sha"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&info); err != nil {
		return "", storage.Transient(fmt.Errorf("%s: reading the revision's commit: %w", b.Location(), err))
	}
	if !commitID.MatchString(info.SHA) {
		return "", fmt.Errorf("%s: the hub answered commit %q for revision %q, not a commit id", b.Location(), info.SHA, b.revisionName())
	}
	b.pin.commit = info.SHA
	return b.pin.commit, nil
}

// Pinned returns the commit every read names, or "" while the revision is
// not resolved yet (before the first read, and always offline). It makes no
// request.
func (b *Backend) Pinned() string {
	b.pin.mu.Lock()
	defer b.pin.mu.Unlock()
	return b.pin.commit
}

// commitID is a git commit id as the Hub writes it.
var commitID = regexp.MustCompile(`^[0-9a-f]{40}$`)

// fileURL is the resolve URL of the named object at commit.
func (b *Backend) fileURL(commit, name string) *url.URL {
	owner, repo, _ := strings.Cut(b.repo, "/")
	elems := []string{"datasets", owner, repo, "resolve", commit}
	if b.prefix != "" {
		elems = append(elems, strings.Split(b.prefix, "/")...)
	}
	return b.url(append(elems, strings.Split(name, "/")...)...)
}

// url is the endpoint's URL of the path segments, each escaped as one
// (a revision "refs/pr/1" is one segment: refs%2Fpr%2F1).
func (b *Backend) url(segments ...string) *url.URL {
	u := *b.endpoint
	esc := make([]string, len(segments))
	for i, s := range segments {
		esc[i] = url.PathEscape(s)
	}
	u.RawPath = strings.TrimRight(b.endpoint.EscapedPath(), "/") + "/" + strings.Join(esc, "/")
	u.Path, _ = url.PathUnescape(u.RawPath)
	return &u
}

// Token returns the Hub token of the environment: HF_TOKEN, else the
// token file ($HF_TOKEN_PATH, else $HF_HOME/token, else
// $XDG_CACHE_HOME/huggingface/token or ~/.cache/huggingface/token, as
// huggingface_hub looks), else "" (anonymous). A token file that exists
// but cannot be read is an error naming it.
func Token() (string, error) {
	if t := strings.TrimSpace(os.Getenv("HF_TOKEN")); t != "" {
		return t, nil
	}
	file := TokenPath()
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("hub token file: %w (set HF_TOKEN, or HF_TOKEN_PATH to another file)", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// TokenPath is where Token looks for the token file.
func TokenPath() string {
	if p := os.Getenv("HF_TOKEN_PATH"); p != "" {
		return p
	}
	if h := os.Getenv("HF_HOME"); h != "" {
		return filepath.Join(h, "token")
	}
	if c := os.Getenv("XDG_CACHE_HOME"); c != "" {
		return filepath.Join(c, "huggingface", "token")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "huggingface", "token")
}
