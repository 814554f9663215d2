package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/internal/missing"
	"github.com/oxefs/oxefs/internal/testkit"
)

// The canary credentials of the s3:// tests: gofakes3 accepts any key, and
// neither may appear in a log line or a document of the mount.
const (
	canarySecret = "oxefsCanarySecret0123456789abcdefABCDEF"
	canaryToken  = "oxefsCanarySessionToken9876543210"
)

// fakeS3 serves local directories from an in-process gofakes3: objects
// maps a key prefix in bucket to a directory. Its env reaches it, with the
// canary secret and session token as credentials.
func fakeS3(t *testing.T, bucket string, objects map[string]string) (*testkit.FakeS3, []string) {
	t.Helper()
	srv := testkit.StartFakeS3(t, bucket, nil)
	for prefix, dir := range objects {
		srv.PutDir(t, bucket, prefix, dir)
	}
	env := append(srv.Env(), "AWS_SECRET_ACCESS_KEY="+canarySecret, "AWS_SESSION_TOKEN="+canaryToken)
	return srv, env
}

// noCanary fails the test if the canary credentials appear in text.
func noCanary(t *testing.T, where, text string) {
	t.Helper()
	for _, c := range []string{canarySecret, canaryToken} {
		if strings.Contains(text, c) {
			t.Errorf("%s holds a credential (%s…)", where, c[:12])
		}
	}
}

// s3Mix mixes tiny_bridge (with its val split) from s3://, tiny_kuka from
// gs:// and tiny_table local; $BRIDGE, $KUKA and $TABLE are the sources.
const s3Mix = `batch_size: 4
image_size: [32, 32]
samples_per_episode: 2
seed: 3
datasets:
  - name: bridge
    source: $BRIDGE
    image_key: steps/observation/image
    val_split: val
    weight: 0.5
  - name: kuka
    source: $KUKA
    image_key: steps/observation/image
    anonymous: true
    weight: 0.2
  - name: table
    source: $TABLE
    weight: 0.3
`

func s3MixConfig(t *testing.T, bridge, kuka string) string {
	table, _ := filepath.Abs("testdata/datasets/tiny_table/1.0.0")
	return writeMixText(t, strings.NewReplacer("$BRIDGE", bridge, "$KUKA", kuka, "$TABLE", table).Replace(s3Mix))
}

// TestMountS3Mix mounts a mix of s3://, gs:// and local datasets (the S3
// one from gofakes3 through the SDK, with a canary secret and session
// token) and reads the same train and val batches as a mount of the
// all-local copy. The daemon's log, at debug level, and its documents never
// show the credentials.
func TestMountS3Mix(t *testing.T) {
	testkit.RequireFUSE(t)
	bridge, _ := filepath.Abs("testdata/datasets/tiny_bridge/1.0.0")
	kuka, _ := filepath.Abs("testdata/datasets/tiny_kuka/1.0.0")
	_, env := fakeS3(t, "robotics", map[string]string{"tiny_bridge/1.0.0": bridge})
	gcs := fakeGCS(t, "robotics", map[string]string{"tiny_kuka/1.0.0": kuka})
	env = append(env, "STORAGE_EMULATOR_HOST="+strings.TrimPrefix(gcs.URL(), "http://"))

	local := t.TempDir()
	startMount(t, local, nil, "--config", s3MixConfig(t, bridge, kuka), "--cache-dir", t.TempDir())
	remote := t.TempDir()
	d := startMount(t, remote, env, "--config", s3MixConfig(t, "s3://robotics/tiny_bridge/1.0.0", "gs://robotics/tiny_kuka/1.0.0"),
		"--cache-dir", t.TempDir(), "--log-level", "debug")
	var info mountInfo
	readJSON(t, filepath.Join(local, "info.json"), &info)
	n := min(info.NumBatches, 8)
	want, got := hashBatches(t, local, "batches", n, 2, 0), hashBatches(t, remote, "batches", n, 2, 5)
	wantVal, gotVal := hashBatches(t, local, "val/batches", 2, 1, 0), hashBatches(t, remote, "val/batches", 2, 1, 0)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("train batch %d from s3:// + gs:// differs from the local copy's", i)
		}
	}
	for i := range wantVal {
		if gotVal[i] != wantVal[i] {
			t.Errorf("val batch %d from s3:// differs from the local copy's", i)
		}
	}
	for _, doc := range []string{"info.json", "stats.json"} {
		b, err := os.ReadFile(filepath.Join(remote, doc))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "s3://robotics/tiny_bridge/1.0.0") && doc == "info.json" {
			t.Errorf("info.json does not name the s3:// source:\n%s", b)
		}
		noCanary(t, doc, string(b))
	}
	d.stop(t)
	log := d.stderr()
	if !strings.Contains(log, "msg=mounted") {
		t.Errorf("the daemon's log lacks its lines: the canary check saw too little:\n%s", log)
	}
	noCanary(t, "the daemon's log", log)
	t.Logf("%d train and %d val batches equal; log %d bytes without credentials", len(got), len(gotVal), len(log))
}

// TestInspectS3 inspects an s3:// source on gofakes3 reached through
// AWS_ENDPOINT_URL_S3, anonymously and with keys; a missing bucket and a
// refused anonymous read say what to try.
func TestInspectS3(t *testing.T) {
	kuka, _ := filepath.Abs("testdata/datasets/tiny_kuka/1.0.0")
	srv, env := fakeS3(t, "robotics", map[string]string{"tiny_kuka/1.0.0": kuka})
	for _, args := range [][]string{{"--index"}, {"--anonymous"}} {
		out, errOut, code := runOxefs(t, env, append([]string{"inspect", "--cache-dir", t.TempDir(), "s3://robotics/tiny_kuka/1.0.0"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		for _, want := range []string{"tiny_kuka 1.0.0", "s3://robotics/tiny_kuka/1.0.0", "8 episodes", "steps/observation/depth"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, out)
			}
		}
		noCanary(t, "inspect's output", out+errOut)
	}
	_, errOut, code := runOxefs(t, env, "inspect", "--cache-dir", t.TempDir(), "s3://nobucket/tiny_kuka/1.0.0")
	if code == 0 || !strings.Contains(errOut, `no bucket "nobucket" at `+srv.URL) || !strings.Contains(errOut, "AWS_ENDPOINT_URL_S3") {
		t.Errorf("missing bucket: exit %d:\n%s", code, errOut)
	}
	srv.RequireKey(testkit.S3AccessKey)
	_, errOut, code = runOxefs(t, env, "inspect", "--anonymous", "--cache-dir", t.TempDir(), "s3://robotics/tiny_kuka/1.0.0")
	if code == 0 || !strings.Contains(errOut, "refuses anonymous reads") {
		t.Errorf("anonymous read of a private bucket: exit %d:\n%s", code, errOut)
	}
	noEnv := []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_ENDPOINT_URL_S3=" + srv.URL}
	_, errOut, code = runOxefs(t, noEnv, "inspect", "--cache-dir", t.TempDir(), "s3://robotics/tiny_kuka/1.0.0")
	if code == 0 || !strings.Contains(errOut, "no AWS credentials") || !strings.Contains(errOut, "AWS_ACCESS_KEY_ID") {
		t.Errorf("no credentials: exit %d:\n%s", code, errOut)
	}
}

// TestMountOfflineS3: after `oxefs warm` of a mix with an s3:// dataset,
// with gofakes3 stopped, `mount --offline` serves the same train and val
// batches as an online mount, from the disk cache alone.
func TestMountOfflineS3(t *testing.T) {
	testkit.RequireFUSE(t)
	bridge, _ := filepath.Abs("testdata/datasets/tiny_bridge/1.0.0")
	srv, env := fakeS3(t, "robotics", map[string]string{"tiny_bridge/1.0.0": bridge})
	table, _ := filepath.Abs("testdata/datasets/tiny_table/1.0.0")
	cfg := writeMixText(t, `batch_size: 4
image_size: [32, 32]
samples_per_episode: 0
datasets:
  - source: s3://robotics/tiny_bridge/1.0.0
    image_key: steps/observation/image
    val_split: val
  - name: table
    source: `+table+`
`)
	cacheDir := t.TempDir()
	out, stderr, code := runOxefs(t, env, "warm", "--config", cfg, "--cache-dir", cacheDir)
	if code != 0 {
		t.Fatalf("warm: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"5 of 5 shards in the disk cache", "mount --offline can serve this mix"} {
		if !strings.Contains(out, want) {
			t.Fatalf("warm's output lacks %q:\n%s", want, out)
		}
	}
	noCanary(t, "warm's output", out+stderr)
	offline := sameOnlineOffline(t, srv.Stop, env, cfg, cacheDir, 3)
	var stats struct {
		Disk struct{ Hits, Misses int64 } `json:"disk_cache"`
	}
	readJSON(t, filepath.Join(offline, "stats.json"), &stats)
	if stats.Disk.Misses != 0 || stats.Disk.Hits == 0 {
		t.Fatalf("offline mount: %d disk cache misses, %d hits; want only hits", stats.Disk.Misses, stats.Disk.Hits)
	}
}

// TestMountTwoNodes is the two-node recipe: two daemons, as two nodes of
// one world of 4 ranks (node A --ranks 0-1, node B --ranks 2-3), each with
// its own cache, the same config and the same s3:// source, and no
// coordination. Together their ranks serve exactly the batches of a
// single-node daemon, train and val: rank r's batch i is global batch
// r + 4i.
func TestMountTwoNodes(t *testing.T) {
	testkit.RequireFUSE(t)
	bridge, _ := filepath.Abs("testdata/datasets/tiny_bridge/1.0.0")
	_, env := fakeS3(t, "robotics", map[string]string{"tiny_bridge/1.0.0": bridge})
	cfg := writeMixText(t, `batch_size: 2
image_size: [32, 32]
samples_per_episode: 2
num_batches: 12
datasets:
  - source: s3://robotics/tiny_bridge/1.0.0
    image_key: steps/observation/image
    val_split: val
`)
	const world = 4
	single := t.TempDir()
	startMount(t, single, env, "--config", cfg, "--cache-dir", t.TempDir())
	nodeA, nodeB := t.TempDir(), t.TempDir()
	startMount(t, nodeA, env, "--config", cfg, "--cache-dir", t.TempDir(), "--world", "4", "--ranks", "0-1")
	startMount(t, nodeB, env, "--config", cfg, "--cache-dir", t.TempDir(), "--world", "4", "--ranks", "2-3")
	node := func(rank int) string {
		if rank < 2 {
			return filepath.Join(nodeA, "rank", string(rune('0'+rank)))
		}
		return filepath.Join(nodeB, "rank", string(rune('0'+rank)))
	}
	var info mountInfo
	readJSON(t, filepath.Join(single, "info.json"), &info)
	if info.NumBatches != 12 || info.Val == nil {
		t.Fatalf("single node: %d train batches, val %v; want 12 and a val view", info.NumBatches, info.Val)
	}
	for _, view := range []struct {
		dir string
		n   int64
	}{{"batches", info.NumBatches}, {"val/batches", info.Val.NumBatches}} {
		want := hashBatches(t, single, view.dir, view.n, 2, 0)
		perRank := make([][]string, world)
		for r := range world {
			var ri struct {
				Rank  int `json:"rank"`
				Train struct {
					NumBatches int64 `json:"num_batches"`
				} `json:"train"`
			}
			readJSON(t, filepath.Join(node(r), "info.json"), &ri)
			if ri.Rank != r {
				t.Fatalf("%s/info.json names rank %d", node(r), ri.Rank)
			}
			perRank[r] = hashBatches(t, node(r), view.dir, (view.n-int64(r)+world-1)/world, 1, 0)
		}
		served := 0
		for g := range view.n {
			r, i := g%world, g/world
			if perRank[r][i] != want[g] {
				t.Errorf("%s: global batch %d differs from rank %d's batch %d", view.dir, g, r, i)
			}
			served++
		}
		t.Logf("%s: the 4 ranks of 2 nodes serve the %d batches of one node", view.dir, served)
	}
}

// TestMountLeRobotS3: a LeRobot dataset (AV1 video, parquet) on s3:// mixed
// with a local one serves the batches of the all-local mix through a real
// mount; after `oxefs warm`, with gofakes3 stopped, `mount --offline`
// serves them again from the disk cache.
func TestMountLeRobotS3(t *testing.T) {
	testkit.RequireFUSE(t)
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	av1, _ := filepath.Abs("testdata/lerobot/lerobot_av1")
	h264, _ := filepath.Abs("testdata/lerobot/lerobot_h264")
	srv, env := fakeS3(t, "robotics", map[string]string{"lerobot_av1": av1})
	mix := func(src string) string {
		return writeMixText(t, `batch_size: 3
image_size: [32, 40]
samples_per_episode: 2
datasets:
  - name: top
    source: `+src+`
    image_key: observation.images.top
    val_split: val
    offset: [1, 3]
    language_key: task
    action_keys: [action]
    state_key: observation.state
  - name: front
    source: `+h264+`
    image_key: observation.images.front
    offset: 2
    action_keys: [action]
    state_key: observation.state
`)
	}
	local := t.TempDir()
	ld := startMount(t, local, nil, "--config", mix(av1), "--cache-dir", t.TempDir())
	var info mountInfo
	readJSON(t, filepath.Join(local, "info.json"), &info)
	n := min(info.NumBatches, 6)
	want, wantVal := hashBatches(t, local, "batches", n, 2, 0), hashBatches(t, local, "val/batches", 1, 1, 0)
	ld.stop(t)

	cfg, cacheDir := mix("s3://robotics/lerobot_av1"), t.TempDir()
	check := func(how string, args ...string) {
		t.Helper()
		mnt := t.TempDir()
		d := startMount(t, mnt, env, append([]string{"--config", cfg, "--cache-dir", cacheDir}, args...)...)
		got, gotVal := hashBatches(t, mnt, "batches", n, 2, 7), hashBatches(t, mnt, "val/batches", 1, 1, 0)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: train batch %d differs from the local mix's", how, i)
			}
		}
		if gotVal[0] != wantVal[0] {
			t.Errorf("%s: val batch 0 differs from the local mix's", how)
		}
		d.stop(t)
		noCanary(t, how+": the daemon's log", d.stderr())
	}
	check("s3:// online")
	out, stderr, code := runOxefs(t, env, "warm", "--config", cfg, "--cache-dir", cacheDir)
	if code != 0 || !strings.Contains(out, "mount --offline can serve this mix") {
		t.Fatalf("warm: exit %d\n%s\n%s", code, out, stderr)
	}
	srv.Stop()
	check("s3:// offline", "--offline", "--fetch-timeout", "1s", "--fetch-stall", "1s")
}
