package fakehub

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/pythontest"
)

// hubFiles is a small dataset repository: regular files and LFS files
// (1 KiB and more), in folders.
func hubFiles() map[string][]byte {
	big := make([]byte, 300_000)
	for i := range big {
		big[i] = byte(i * 7)
	}
	return map[string][]byte{
		"README.md":                         []byte("# a dataset\n"),
		"meta/info.json":                    []byte(`{"codebase_version": "v3.0"}`),
		"data/chunk-000/file-000.parquet":   big,
		"videos/cam/chunk-000/file-000.mp4": bytes.Repeat([]byte("mp4!"), 700),
		"1.0.0/dataset_info.json":           []byte(`{"name": "x"}`),
	}
}

// TestHuggingFaceHubDownloads proves the fake Hub speaks the protocol:
// the real huggingface_hub client (snapshot_download of a branch, then of
// a tag after the branch moved; hf_hub_download of one LFS file), pointed
// at it with HF_ENDPOINT and holding the token it requires, downloads
// every file byte for byte. Skipped, saying so, where no python3 imports
// huggingface_hub (`pip install huggingface_hub`).
func TestHuggingFaceHubDownloads(t *testing.T) {
	py := pythontest.Find(t, "huggingface_hub")
	hub := New(t, Options{PageSize: 2}) // several tree pages
	files := hubFiles()
	first := hub.Commit("oxe/demo", "main", files)
	hub.SetRef("oxe/demo", "v1", first)
	moved := map[string][]byte{"README.md": []byte("# moved\n"), "meta/info.json": []byte(`{"codebase_version": "v9"}`)}
	const token = "hf_fakehubtoken"
	hub.RequireToken(token)

	script := `
import json, os, sys
from huggingface_hub import snapshot_download, hf_hub_download
out = {}
out["main"] = snapshot_download("oxe/demo", repo_type="dataset", cache_dir=sys.argv[1])
out["v1"] = snapshot_download("oxe/demo", repo_type="dataset", revision="v1", cache_dir=sys.argv[2])
out["one"] = hf_hub_download("oxe/demo", "data/chunk-000/file-000.parquet", repo_type="dataset", revision="v1", cache_dir=sys.argv[3])
print(json.dumps(out))
`
	run := func(args ...string) map[string]string {
		t.Helper()
		cmd := exec.Command(py, append([]string{"-c", script}, args...)...)
		cmd.Env = append(os.Environ(), "HF_ENDPOINT="+hub.URL(), "HF_TOKEN="+token, "HF_HUB_DISABLE_TELEMETRY=1",
			"HF_HUB_DISABLE_PROGRESS_BARS=1", "HF_HUB_ETAG_TIMEOUT=30", "HF_HUB_DOWNLOAD_TIMEOUT=30", "HF_HOME="+t.TempDir())
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("huggingface_hub: %v\n%s", err, stderr.String())
		}
		var got map[string]string
		if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
			t.Fatalf("%v: %q\n%s", err, stdout.String(), stderr.String())
		}
		return got
	}
	// Then the branch moves: the client reads the new commit at main and
	// the first at the tag.
	got := run(t.TempDir(), t.TempDir(), t.TempDir())
	checkTree(t, got["main"], files)
	checkTree(t, got["v1"], files)
	if b, err := os.ReadFile(got["one"]); err != nil || !bytes.Equal(b, files["data/chunk-000/file-000.parquet"]) {
		t.Errorf("hf_hub_download: %d bytes, %v; want the file's %d", len(b), err, len(files["data/chunk-000/file-000.parquet"]))
	}
	hub.Commit("oxe/demo", "main", moved)
	got = run(t.TempDir(), t.TempDir(), t.TempDir())
	checkTree(t, got["main"], moved)
	checkTree(t, got["v1"], files)

	var lfs, storage, paged int
	for _, r := range hub.Requests() {
		switch {
		case r.Host == "storage" && r.Auth != "":
			t.Errorf("huggingface_hub sent the token to the storage host: %s %s", r.Method, r.Path)
		case r.Host == "storage":
			storage++
		case r.Host == "hub" && strings.Contains(r.Path, "/resolve/") && r.Status == http.StatusFound:
			lfs++
		case r.Host == "hub" && strings.Contains(r.Path, "/tree/"):
			paged++
		}
	}
	if lfs == 0 || storage == 0 || paged < 2 {
		t.Errorf("%d LFS redirects, %d storage requests, %d tree pages: the test does not cover them", lfs, storage, paged)
	}
}

// checkTree fails unless dir holds exactly files, byte for byte.
func checkTree(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	seen := 0
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		want, ok := files[filepath.ToSlash(rel)]
		b, err := os.ReadFile(p)
		switch {
		case err != nil:
			return err
		case !ok:
			t.Errorf("%s: downloaded %s, which the commit does not hold", dir, rel)
		case !bytes.Equal(b, want):
			t.Errorf("%s: %s has %d bytes that differ from the commit's %d", dir, rel, len(b), len(want))
		}
		seen++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(files) {
		t.Errorf("%s: %d files downloaded, want %d", dir, seen, len(files))
	}
}

// TestRateLimitAndToken: the knobs answer as the Hub does, 429 with
// Retry-After and 401 naming the token it got.
func TestRateLimitAndToken(t *testing.T) {
	hub := New(t, Options{})
	hub.Commit("oxe/demo", "main", hubFiles())
	get := func(auth string) *http.Response {
		req, _ := http.NewRequest("GET", hub.URL()+"/api/datasets/oxe/demo/revision/main", nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	hub.RateLimit(1, 2*time.Second)
	if r := get(""); r.StatusCode != 429 || r.Header.Get("Retry-After") != "2" {
		t.Errorf("rate limited: %d, Retry-After %q; want 429, 2", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if r := get(""); r.StatusCode != 200 {
		t.Errorf("after the limit: %d, want 200", r.StatusCode)
	}
	hub.RequireToken("hf_x")
	if r := get("hf_y"); r.StatusCode != 401 || !strings.Contains(r.Header.Get("X-Error-Message"), "hf_y") {
		t.Errorf("wrong token: %d %q; want 401 naming the token", r.StatusCode, r.Header.Get("X-Error-Message"))
	}
	if r := get("hf_x"); r.StatusCode != 200 {
		t.Errorf("right token: %d, want 200", r.StatusCode)
	}
}
