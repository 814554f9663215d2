package main

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/internal/testkit/fakehub"
)

// hfRepos are the fixture directories (under testdata) that the hf:// golden
// cases read from a fake Hub: each a repository, at the given folder of it.
var hfRepos = []struct{ dir, repo, folder string }{
	{"datasets/tiny_bridge/1.0.0", "oxe/tiny_bridge", "1.0.0"},
	{"datasets/tiny_table/1.0.0", "oxe/tiny_table", ""},
	{"lerobot/lerobot_av1", "lerobot/lerobot_av1", ""},
}

// TestGoldenFromHub: golden mixes with some of their datasets read from
// hf:// (a fake Hub at HF_ENDPOINT: RLDS at the root of a repository and
// in a folder of one, at a branch and at a tag, and LeRobot with its
// videos as LFS files) and the others local serve batches whose digests
// are the all-local golden ones. Every branch moves to a commit of damaged
// files right after the pipeline opened, before any batch: the batches do
// not change, and the reads made after the move named the first commit.
func TestGoldenFromHub(t *testing.T) {
	data, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	hub := fakehub.New(t, fakehub.Options{})
	t.Setenv("HF_ENDPOINT", hub.URL())
	t.Setenv("HF_TOKEN", "hf_golden")
	hub.RequireToken("hf_golden")
	first := map[string]string{}
	for _, r := range hfRepos {
		files := map[string][]byte{}
		for name, b := range testkit.ReadDirFiles(t, filepath.Join(data, r.dir)) {
			files[strings.TrimPrefix(r.folder+"/"+name, "/")] = b
		}
		first[r.repo] = hub.Commit(r.repo, "main", files)
		hub.SetRef(r.repo, "v1", first[r.repo])
	}
	remote := strings.NewReplacer(
		"$DATA/datasets/tiny_bridge/1.0.0", "hf://datasets/oxe/tiny_bridge/1.0.0",
		"$DATA/datasets/tiny_table/1.0.0", "hf://datasets/oxe/tiny_table@v1",
		"source: $DATA/lerobot/lerobot_av1\n    val_split", "source: hf://datasets/lerobot/lerobot_av1\n    val_split",
	)
	cases := []goldenCase{goldenCaseNamed(t, goldenCases, "mix3_weighted")}
	files := []string{goldenFile}
	if err := av.Available(); err == nil {
		cases = append(cases, goldenCaseNamed(t, lerobotGoldenCases, "lerobot_mixed"))
		files = append(files, goldenLeRobotFile)
	} else {
		t.Logf("LeRobot video needs libavcodec (%v): the LeRobot case is left out", err)
	}
	want := map[string]goldenDigest{}
	for _, f := range files {
		maps.Copy(want, readGolden(t, f))
	}
	for _, tc := range cases {
		for repo, c := range first {
			hub.SetRef(repo, "main", c)
		}
		yaml := remote.Replace(tc.yaml)
		if !strings.Contains(yaml, "hf://") || !strings.Contains(yaml, "$DATA") {
			t.Fatalf("case %s: the mix does not read both hf:// and local datasets:\n%s", tc.name, yaml)
		}
		p, err := openGolden(t, strings.ReplaceAll(yaml, "$DATA", data))
		if err != nil {
			t.Fatalf("case %s: %v", tc.name, err)
		}
		// Every branch moves to damaged bytes before the first batch.
		for _, r := range hfRepos {
			damaged := map[string][]byte{}
			for name, b := range testkit.ReadDirFiles(t, filepath.Join(data, r.dir)) {
				damaged[strings.TrimPrefix(r.folder+"/"+name, "/")] = bytes.Repeat([]byte{0xa5}, len(b))
			}
			hub.Commit(r.repo, "main", damaged)
		}
		moved := len(hub.Requests())
		got := caseDigests(t, tc, p)
		for _, k := range slices.Sorted(maps.Keys(got)) {
			if w, ok := want[k]; !ok {
				t.Errorf("%s: no golden digest", k)
			} else if w != got[k] {
				t.Errorf("%s (case/view/batch): from hf:// %+v, all local %+v", k, got[k], w)
			}
		}
		after := hub.Requests()[moved:]
		if len(after) == 0 {
			t.Errorf("case %s: no request after the branches moved; the test does not see the pinning", tc.name)
		}
		for _, r := range after {
			if r.Host == "hub" && !slices.ContainsFunc(slices.Collect(maps.Values(first)), func(c string) bool { return strings.Contains(r.Path, "/resolve/"+c+"/") }) {
				t.Errorf("case %s: after the move, %s %s does not name a first commit", tc.name, r.Method, r.Path)
			}
		}
		t.Logf("case %s: %d requests after the branches moved, all at the first commits", tc.name, len(after))
	}
}

// goldenCaseNamed returns the case of cases with that name.
func goldenCaseNamed(t *testing.T, cases []goldenCase, name string) goldenCase {
	t.Helper()
	for _, c := range cases {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no golden case %s", name)
	return goldenCase{}
}

// caseDigests builds tc's golden batches from p and digests them, by
// "case/view/batch".
func caseDigests(t *testing.T, tc goldenCase, p *goldenPipe) map[string]goldenDigest {
	t.Helper()
	got := map[string]goldenDigest{}
	views := []struct {
		name string
		v    *goldenView
	}{{"train", p.train}, {"val", p.val}}
	for _, view := range views {
		if view.v == nil {
			continue
		}
		for _, n := range goldenBatches(view.v, view.name == "val") {
			npy, meta, err := view.v.get(n)
			if err != nil {
				t.Fatalf("case %s, %s batch %d: %v", tc.name, view.name, n, err)
			}
			d := goldenDigest{NPY: digest(npy)}
			if meta != nil {
				d.Meta = digest(meta)
			}
			got[fmt.Sprintf("%s/%s/%d", tc.name, view.name, n)] = d
		}
	}
	return got
}
