package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestInspectLocal(t *testing.T) {
	cacheDir := t.TempDir()
	out, errOut, code := runOxefs(t, nil, "inspect", "--cache-dir", cacheDir, "testdata/datasets/tiny_bridge/1.0.0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"tiny_bridge 1.0.0",
		"train", "24 episodes", "3 shards",
		"val", "6 episodes",
		"steps/observation/image", "jpeg", "[96,128,3]",
		"steps/observation/wrist_image", "[64,64,3]",
		"steps/action/world_vector", "float32",
		"episode_metadata/file_path",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "steps min/median") {
		t.Error("length stats shown although no index was built")
	}

	// --index builds the length index; the stats then appear, also later
	// without --index.
	out, errOut, code = runOxefs(t, nil, "inspect", "--index", "--cache-dir", cacheDir, "testdata/datasets/tiny_kuka/1.0.0")
	if code != 0 || !strings.Contains(out, "steps min/median/mean/max 4/8/8.4/13") {
		t.Fatalf("exit %d, stderr %s, output:\n%s", code, errOut, out)
	}
	out, _, _ = runOxefs(t, nil, "inspect", "--cache-dir", cacheDir, "testdata/datasets/tiny_kuka/1.0.0")
	if !strings.Contains(out, "steps min/median/mean/max 4/8/8.4/13") {
		t.Fatalf("persisted index not used:\n%s", out)
	}
}

func TestInspectJSON(t *testing.T) {
	out, errOut, code := runOxefs(t, nil, "inspect", "--json", "--cache-dir", t.TempDir(), "testdata/datasets/tiny_table/1.0.0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var desc struct {
		Name   string
		Splits []struct {
			Name     string
			Episodes int
			Shards   int
		}
		Images []struct {
			Key           string
			Encoding      string
			Height, Width int
		}
	}
	if err := json.Unmarshal([]byte(out), &desc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if desc.Name != "tiny_table" || len(desc.Splits) != 1 || desc.Splits[0].Episodes != 10 || desc.Splits[0].Shards != 2 {
		t.Errorf("unexpected description: %+v", desc)
	}
	if len(desc.Images) != 1 || desc.Images[0].Key != "steps/observation/rgb" || desc.Images[0].Encoding != "png" ||
		desc.Images[0].Height != 40 || desc.Images[0].Width != 72 {
		t.Errorf("images: %+v", desc.Images)
	}
}

// TestInspectGCS inspects a gs:// source served by fake-gcs-server, reached
// through STORAGE_EMULATOR_HOST as a user's emulator would be.
func TestInspectGCS(t *testing.T) {
	srv := fakeGCS(t, "robotics", map[string]string{"tiny_kuka/1.0.0": "testdata/datasets/tiny_kuka/1.0.0"})
	host := strings.TrimPrefix(srv.URL(), "http://")
	out, errOut, code := runOxefs(t, []string{"STORAGE_EMULATOR_HOST=" + host},
		"inspect", "--anonymous", "--index", "--cache-dir", t.TempDir(), "gs://robotics/tiny_kuka/1.0.0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"tiny_kuka 1.0.0", "gs://robotics/tiny_kuka/1.0.0", "8 episodes", "steps/observation/depth", "zlib", "steps min/median/mean/max 4/8/8.4/13"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestInspectErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing dir", []string{"inspect", "testdata/datasets/nope/1.0.0"}, `"testdata/datasets/nope/1.0.0": no such directory`},
		{"not a dataset", []string{"inspect", "testdata"}, "dataset_info.json"},
		{"bad scheme", []string{"inspect", "az://bucket/x"}, "valid: gs://… or hf://… or s3://… or a local directory"},
		{"bad size", []string{"inspect", "--disk", "lots", "testdata/datasets/tiny_kuka/1.0.0"}, "invalid size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runOxefs(t, nil, append(tc.args, "--cache-dir", t.TempDir())...)
			if code == 0 {
				t.Fatal("exit 0 on bad input")
			}
			if !strings.Contains(errOut, tc.want) {
				t.Fatalf("stderr lacks %q:\n%s", tc.want, errOut)
			}
		})
	}
}

// TestInspectLeRobot: inspect recognises a LeRobot v3 dataset by its
// meta/info.json and shows what a mix config needs: splits, feature keys,
// cameras and how each is stored, tasks; --json gives the same.
func TestInspectLeRobot(t *testing.T) {
	out, errOut, code := runOxefs(t, nil, "inspect", "--cache-dir", t.TempDir(), "testdata/lerobot/lerobot_av1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"lerobot_av1  lerobot v3.0", "robot_type synthetic_arm", "3 data files",
		"train", "5 episodes", "val", "2 episodes", "steps min/median/mean/max 9/12/12.0/16",
		"observation.images.top", "video/av1", "observation.images.side", "images in the data files",
		"observation.state", "float32", "tasks (language_key: task): 3", `"open the drawer"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, errOut, code = runOxefs(t, nil, "inspect", "--json", "--cache-dir", t.TempDir(), "testdata/lerobot/lerobot_h264")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var desc struct {
		Name    string
		Format  string
		Cameras []struct{ Key, Stored string }
		Tasks   int
	}
	if err := json.Unmarshal([]byte(out), &desc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if desc.Name != "lerobot_h264" || desc.Format != "lerobot v3.0" || len(desc.Cameras) != 1 || desc.Cameras[0].Stored != "video/h264" || desc.Tasks != 1 {
		t.Errorf("unexpected description: %+v", desc)
	}
}
