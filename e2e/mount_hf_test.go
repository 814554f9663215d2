package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/internal/testkit/fakehub"
)

// hfCanary is the token the fake Hub of these tests requires: it must
// never appear in what oxefs writes.
const hfCanary = "hf_CANARY7e57c0ffee0123456789abcdef"

// hfMix is a mix of RLDS (in a folder of its repository, with a val view)
// and LeRobot (its PNG camera in parquet) datasets from the Hub, an RLDS
// dataset from GCS and a local one; with remote false every source is the
// local copy.
func hfMix(t *testing.T, remote bool) string {
	t.Helper()
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	bridge, lerobot := abs("testdata/datasets/tiny_bridge/1.0.0"), abs("testdata/lerobot/lerobot_av1")
	table := abs("testdata/datasets/tiny_table/1.0.0")
	if remote {
		bridge, lerobot = "hf://datasets/oxe/tiny_bridge/1.0.0", "hf://datasets/lerobot/lerobot_av1@v3.0"
		table = "gs://robotics/tiny_table/1.0.0\n    anonymous: true"
	}
	return writeMixText(t, `batch_size: 4
image_size: [24, 32]
samples_per_episode: 2
datasets:
  - name: bridge
    source: `+bridge+`
    image_key: steps/observation/image
    val_split: val
    offset: [1, 3]
    action_keys: [steps/action/world_vector]
  - name: side
    source: `+lerobot+`
    image_key: observation.images.side
    offset: 2
    action_keys: [action]
    language_key: task
  - name: table
    source: `+table+`
    image_key: steps/observation/rgb
  - name: kuka
    source: `+abs("testdata/datasets/tiny_kuka/1.0.0")+`
    image_key: steps/observation/image
    offset: 2
    action_keys: [steps/action]
`)
}

// startHub serves tiny_bridge (in folder 1.0.0 of oxe/tiny_bridge) and
// lerobot_av1 (tag v3.0 of lerobot/lerobot_av1) from a fake Hub that
// requires hfCanary, and returns it with the environment that points
// oxefs at it and the commit of each repository.
func startHub(t *testing.T) (*fakehub.Hub, []string, map[string]string) {
	t.Helper()
	hub := fakehub.New(t, fakehub.Options{})
	bridge := map[string][]byte{}
	for name, b := range testkit.ReadDirFiles(t, "testdata/datasets/tiny_bridge/1.0.0") {
		bridge["1.0.0/"+name] = b
	}
	commits := map[string]string{
		"bridge": hub.Commit("oxe/tiny_bridge", "main", bridge),
		"side":   hub.Commit("lerobot/lerobot_av1", "main", testkit.ReadDirFiles(t, "testdata/lerobot/lerobot_av1")),
	}
	hub.SetRef("lerobot/lerobot_av1", "v3.0", commits["side"])
	hub.RequireToken(hfCanary)
	return hub, []string{"HF_ENDPOINT=" + hub.URL(), "HF_TOKEN=" + hfCanary, "HF_HOME=" + t.TempDir()}, commits
}

// TestMountFromHub: a mix of hf://, gs:// and local datasets mounts and
// serves the train and val batches of the same mix read all local, byte
// for byte, and info.json names the commit each hf:// dataset is read at;
// `oxefs
// inspect` describes an hf:// dataset; `oxefs warm` fills a cache from
// which, with the Hub gone, `mount --offline` serves them too. The token
// appears nowhere oxefs writes: its logs (at debug level), stats.json,
// the cache directory, and the error of a token the Hub refuses, which
// says to set HF_TOKEN.
func TestMountFromHub(t *testing.T) {
	testkit.RequireFUSE(t)
	hub, env, commits := startHub(t)
	gcs := fakeGCS(t, "robotics", map[string]string{"tiny_table/1.0.0": "testdata/datasets/tiny_table/1.0.0"})
	env = append(env, "STORAGE_EMULATOR_HOST="+strings.TrimPrefix(gcs.URL(), "http://"))
	var written []string // everything oxefs wrote, for the canary

	local := t.TempDir()
	d := startMount(t, local, nil, "--config", hfMix(t, false), "--cache-dir", t.TempDir())
	var info mountInfo
	readJSON(t, filepath.Join(local, "info.json"), &info)
	if info.Val == nil {
		t.Fatal("no val view")
	}
	n, nv := min(info.NumBatches, 6), min(info.Val.NumBatches, 2)
	wantTrain := hashBatches(t, local, "batches", n, 2, 0)
	wantVal := hashBatches(t, local, "val/batches", nv, 1, 0)
	d.stop(t)

	same := func(what, mnt string) {
		t.Helper()
		gotTrain := hashBatches(t, mnt, "batches", n, 2, 5)
		gotVal := hashBatches(t, mnt, "val/batches", nv, 1, 0)
		for i := range gotTrain {
			if gotTrain[i] != wantTrain[i] {
				t.Errorf("%s: train batch %d differs from the all-local mount", what, i)
			}
		}
		for i := range gotVal {
			if gotVal[i] != wantVal[i] {
				t.Errorf("%s: val batch %d differs from the all-local mount", what, i)
			}
		}
		stats, err := os.ReadFile(filepath.Join(mnt, "stats.json"))
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, string(stats))
	}

	cfg := hfMix(t, true)
	out, stderr, code := runOxefs(t, env, "inspect", "hf://datasets/lerobot/lerobot_av1@v3.0")
	if code != 0 || !strings.Contains(out, "lerobot v3.0") || !strings.Contains(out, "observation.images.side") {
		t.Fatalf("inspect hf://: exit %d\n%s\n%s", code, out, stderr)
	}
	written = append(written, out, stderr)

	online := t.TempDir()
	d = startMount(t, online, env, "--config", cfg, "--cache-dir", t.TempDir(), "--log-level", "debug")
	same("hf:// mount", online)
	var pinned struct {
		Datasets map[string]struct {
			Commit string `json:"commit"`
		} `json:"datasets"`
	}
	readJSON(t, filepath.Join(online, "info.json"), &pinned)
	for _, name := range []string{"bridge", "side", "table", "kuka"} {
		if got := pinned.Datasets[name].Commit; got != commits[name] {
			t.Errorf("info.json: dataset %s was read at commit %q, want %q", name, got, commits[name])
		}
	}
	d.stop(t)
	t.Logf("%d train and %d val batches from hf:// and gs:// equal the all-local ones; the hub answered %d requests", n, nv, len(hub.Requests()))
	written = append(written, d.stderr())

	cacheDir := t.TempDir()
	out, stderr, code = runOxefs(t, env, "warm", "--config", cfg, "--cache-dir", cacheDir, "--log-level", "debug")
	if code != 0 || !strings.Contains(out, "mount --offline can serve this mix") {
		t.Fatalf("warm: exit %d\n%s\n%s", code, out, stderr)
	}
	written = append(written, out, stderr)
	hub.Close()
	gcs.Stop()
	offline := t.TempDir()
	d = startMount(t, offline, env, "--config", cfg, "--cache-dir", cacheDir, "--offline",
		"--fetch-timeout", "1s", "--fetch-stall", "1s", "--log-level", "debug")
	same("hf:// mount --offline", offline)
	d.stop(t)
	written = append(written, d.stderr())

	refused, env2, _ := startHub(t)
	refused.RequireToken("hf_another")
	gcs = fakeGCS(t, "robotics", map[string]string{"tiny_table/1.0.0": "testdata/datasets/tiny_table/1.0.0"})
	env2 = append(env2, "STORAGE_EMULATOR_HOST="+strings.TrimPrefix(gcs.URL(), "http://"))
	_, stderr, code = runOxefs(t, env2, "mount", "--config", cfg, "--cache-dir", t.TempDir(), "--log-level", "debug", t.TempDir())
	if code == 0 || !strings.Contains(stderr, "set HF_TOKEN or run `huggingface-cli login`") {
		t.Fatalf("mount with a refused token: exit %d, want a refusal that says to set HF_TOKEN:\n%s", code, stderr)
	}
	t.Logf("a refused token:\n%s", stderr)
	written = append(written, stderr)

	err := filepath.WalkDir(cacheDir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		written = append(written, p)
		b, err := os.ReadFile(p)
		written = append(written, string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range written {
		if strings.Contains(w, hfCanary) || strings.Contains(w, hfCanary[3:15]) {
			t.Fatalf("the token appears in what oxefs wrote:\n%s", w)
		}
	}
}
