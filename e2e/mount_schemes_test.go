package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/internal/testkit/fakehub"
)

// everySchemeMix reads tiny_bridge (with its val split) from $BRIDGE,
// tiny_kuka from $KUKA, tiny_table from $TABLE and tiny_bridge again,
// under another name, from $LOCAL.
const everySchemeMix = `batch_size: 4
image_size: [32, 32]
samples_per_episode: 2
seed: 5
datasets:
  - name: bridge
    source: $BRIDGE
    image_key: steps/observation/image
    val_split: val
    weight: 0.4
  - name: kuka
    source: $KUKA
    image_key: steps/observation/image
    anonymous: true
    weight: 0.2
  - name: table
    source: $TABLE
    weight: 0.2
  - name: bridge_again
    source: $LOCAL
    image_key: steps/observation/image
    weight: 0.2
`

// TestMountEveryScheme: one mix with a dataset on each kind of source —
// s3:// (gofakes3), gs:// (fake-gcs-server), hf:// (the fake Hub, with a
// token) and a local directory — serves the same train and val batches,
// byte for byte, as the same mix read all local; neither the S3 secret
// nor the Hub token appears in the daemon's log or documents.
func TestMountEveryScheme(t *testing.T) {
	testkit.RequireFUSE(t)
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	bridge, kuka, table := abs("testdata/datasets/tiny_bridge/1.0.0"), abs("testdata/datasets/tiny_kuka/1.0.0"), abs("testdata/datasets/tiny_table/1.0.0")
	_, env := fakeS3(t, "robotics", map[string]string{"tiny_bridge/1.0.0": bridge})
	gcs := fakeGCS(t, "robotics", map[string]string{"tiny_kuka/1.0.0": kuka})
	hub := fakehub.New(t, fakehub.Options{})
	hub.Commit("oxe/tiny_table", "main", testkit.ReadDirFiles(t, table))
	hub.RequireToken(hfCanary)
	env = append(env, "STORAGE_EMULATOR_HOST="+strings.TrimPrefix(gcs.URL(), "http://"),
		"HF_ENDPOINT="+hub.URL(), "HF_TOKEN="+hfCanary, "HF_HOME="+t.TempDir())
	mix := func(b, k, tb string) string {
		return writeMixText(t, strings.NewReplacer("$BRIDGE", b, "$KUKA", k, "$TABLE", tb, "$LOCAL", bridge).Replace(everySchemeMix))
	}

	local := t.TempDir()
	startMount(t, local, nil, "--config", mix(bridge, kuka, table), "--cache-dir", t.TempDir())
	remote := t.TempDir()
	d := startMount(t, remote, env, "--config", mix("s3://robotics/tiny_bridge/1.0.0", "gs://robotics/tiny_kuka/1.0.0", "hf://datasets/oxe/tiny_table"),
		"--cache-dir", t.TempDir(), "--log-level", "debug")
	var info mountInfo
	readJSON(t, filepath.Join(local, "info.json"), &info)
	n := min(info.NumBatches, 8)
	want, got := hashBatches(t, local, "batches", n, 2, 0), hashBatches(t, remote, "batches", n, 2, 7)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("train batch %d from s3:// + gs:// + hf:// + local differs from the all-local mix's", i)
		}
	}
	wantVal, gotVal := hashBatches(t, local, "val/batches", 2, 1, 0), hashBatches(t, remote, "val/batches", 2, 1, 0)
	for i := range wantVal {
		if gotVal[i] != wantVal[i] {
			t.Errorf("val batch %d differs from the all-local mix's", i)
		}
	}
	b, err := os.ReadFile(filepath.Join(remote, "info.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"s3://robotics/tiny_bridge/1.0.0", "gs://robotics/tiny_kuka/1.0.0", "hf://datasets/oxe/tiny_table", bridge} {
		if !strings.Contains(string(b), src) {
			t.Errorf("info.json does not name the source %s", src)
		}
	}
	d.stop(t)
	log := d.stderr()
	for where, text := range map[string]string{"info.json": string(b), "the daemon's log": log} {
		noCanary(t, where, text)
		if strings.Contains(text, hfCanary) {
			t.Errorf("%s holds the Hub token", where)
		}
	}
	t.Logf("%d train and %d val batches from four kinds of source equal the all-local mix's", len(got), len(gotVal))
}
