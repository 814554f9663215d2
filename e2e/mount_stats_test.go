package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	_ "github.com/oxefs/oxefs/format/formats" // registers RLDS for format.Open
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/store"
)

// statsCheck checks, with numpy, info.json's statistics against every
// value of the dataset and the normalised batches of one mount against the
// raw batches of another.
const statsCheck = `
import json, sys, numpy as np
raw_eps, norm_mnt, raw_mnt, n = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], int(sys.argv[4])
info = json.load(open(norm_mnt + "/info.json"))
st = info["datasets"]["bridge"]["stats"]
lo, hi = 1, 3
acts = [np.array(e["action"], dtype=np.float64) for e in raw_eps]
states = [np.array(e["state"], dtype=np.float64) for e in raw_eps]
summed = [a[t:t+o].sum(axis=0) for a in acts for o in range(lo, hi + 1) for t in range(len(a) - o)]
def check(name, s, v):
    v = np.asarray(v)
    assert s["count"] == len(v), (name, s["count"], len(v))
    for key, want in [("mean", v.mean(0)), ("std", v.std(0)), ("min", v.min(0)), ("max", v.max(0)),
                      ("q01", np.quantile(v, 0.01, axis=0)), ("q99", np.quantile(v, 0.99, axis=0))]:
        got = np.array(s[key])
        assert np.allclose(got, want, rtol=1e-9, atol=1e-12), (name, key, got, want)
    assert not s.get("quantiles_sampled"), name
check("action", st["action"], np.concatenate(acts))
check("action_summed", st["action_summed"], summed)
check("state", st["state"], np.concatenate(states))
assert st["episodes"] == len(raw_eps) and st["skipped_episodes"] == 0
q01, q99 = np.array(st["action_summed"]["q01"]), np.array(st["action_summed"]["q99"])
mean, std = np.array(st["state"]["mean"]), np.array(st["state"]["std"])
dims = info["datasets"]["bridge"]
seen = 0
for i in range(n):
    a = json.load(open(f"{norm_mnt}/batches/{i:06d}.json"))
    b = json.load(open(f"{raw_mnt}/batches/{i:06d}.json"))
    assert a["episode_id"] == b["episode_id"] and a["offset"] == b["offset"]
    for j in range(len(a["action"])):
        act, raw = np.array(a["action"][j]), np.array(b["action"][j])
        own = dims["action_dim"]
        want = np.clip(2 * (raw[:own] - q01) / (q99 - q01) - 1, -1, 1)
        assert np.allclose(act[:own], want, rtol=1e-9, atol=1e-12), (act, want)
        assert (act[own:] == 0).all() and np.array(a["action_mask"][j]).sum() == own
        s, rs = np.array(a["initial_state"][j]), np.array(b["initial_state"][j])
        assert np.allclose(s, (rs - mean) / std, rtol=1e-9, atol=1e-12), (s, rs)
        seen += 1
print("ok", seen, "samples")
`

// TestMountNormalisationStats: oxefs computes each dataset's statistics
// (info.json) as numpy does over the same values, and a mount with
// normalize serves exactly the normalised values of a mount without it.
func TestMountNormalisationStats(t *testing.T) {
	py := findPython(t, "numpy")
	src, _ := filepath.Abs("testdata/datasets/tiny_bridge/1.0.0")
	mix := func(extra string) string {
		p := filepath.Join(t.TempDir(), "mix.yaml")
		text := "batch_size: 8\nimage_size: [16, 16]\n" + extra + "datasets:\n  - name: bridge\n    source: " + src +
			"\n    image_key: steps/observation/image\n    offset: [1, 3]\n" +
			"    action_keys: [steps/action/world_vector, steps/action/rotation_delta]\n    state_key: steps/observation/state\n"
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	normed, raw := t.TempDir(), t.TempDir()
	startMount(t, normed, nil, "--config", mix("normalize: {action: q01_q99, state: mean_std}\n"), "--cache-dir", t.TempDir())
	startMount(t, raw, nil, "--config", mix(""), "--cache-dir", t.TempDir())

	// Every value of the train split, read through the RLDS reader.
	st, err := store.NewStore(store.Options{IndexDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	b, err := storage.Open(ctx, src, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := format.Open(ctx, "bridge", b, &format.Env{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := d.Select("train")
	if err != nil {
		t.Fatal(err)
	}
	segs, err := d.Info().Segments(ranges)
	if err != nil {
		t.Fatal(err)
	}
	type values struct {
		Action [][]float64 `json:"action"`
		State  [][]float64 `json:"state"`
	}
	var eps []values
	for _, s := range segs {
		for r := s.First; r < s.First+s.Count; r++ {
			ep, err := d.Episode(ctx, episode.Key{Split: s.Split, Shard: s.Shard, Record: r})
			if err != nil {
				t.Fatal(err)
			}
			rows := func(keys ...string) [][]float64 {
				out := make([][]float64, ep.Steps())
				for _, k := range keys {
					v, err := ep.Feature(k)
					if err != nil {
						t.Fatal(err)
					}
					vals, err := v.Float64s(nil)
					if err != nil {
						t.Fatal(err)
					}
					for i := range out {
						out[i] = append(out[i], vals[i*v.Per():(i+1)*v.Per()]...)
					}
				}
				return out
			}
			eps = append(eps, values{rows("steps/action/world_vector", "steps/action/rotation_delta"), rows("steps/observation/state")})
		}
	}
	dump := filepath.Join(t.TempDir(), "values.json")
	j, _ := json.Marshal(eps)
	if err := os.WriteFile(dump, j, 0o644); err != nil {
		t.Fatal(err)
	}
	var info struct {
		NumBatches int `json:"num_batches"`
	}
	readJSON(t, filepath.Join(raw, "info.json"), &info)
	out, err := exec.Command(py, "-c", statsCheck, dump, normed, raw, "4").CombinedOutput()
	if err != nil {
		t.Fatalf("numpy check failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
