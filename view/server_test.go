package view

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writeNPY writes a NumPy 1.0 file of data (uint8, bool, float32 or
// int64 values) with the given shape.
func writeNPY(t *testing.T, path string, dtype string, shape []int, data []byte) {
	t.Helper()
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	sh := strings.Join(dims, ", ")
	if len(shape) == 1 {
		sh += ","
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", dtype, sh)
	pad := 64 - (10+len(h)+1)%64
	h += strings.Repeat(" ", pad%64) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(h)))
	b.WriteString(h)
	b.Write(data)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func i64bytes(v []int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

func boolbytes(v []bool) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		if x {
			b[i] = 1
		}
	}
	return b
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// stepMount writes what a step-mode mount serves for one train batch of
// B=2 samples: slots "cam" (T=2, 4×3 frames, sample 1 without the camera)
// and "wrist", a chunk of 3 actions of width 2, and an extra per-sample
// array "aug.crop" the viewer knows nothing of.
func stepMount(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	arrays := []map[string]any{
		{"name": "observation.images.cam", "file": "observation.images.cam.npy", "dtype": "|u1", "shape": []int{2, 2, 4, 3, 3}},
		{"name": "observation.images.cam_is_pad", "file": "observation.images.cam_is_pad.npy", "dtype": "|b1", "shape": []int{2, 2}},
		{"name": "image_mask", "file": "image_mask.npy", "dtype": "|b1", "shape": []int{2, 1}},
		{"name": "action", "file": "action.npy", "dtype": "<f4", "shape": []int{2, 3, 2}},
		{"name": "action_is_pad", "file": "action_is_pad.npy", "dtype": "|b1", "shape": []int{2, 3}},
		{"name": "action_mask", "file": "action_mask.npy", "dtype": "|b1", "shape": []int{2, 2}},
		{"name": "dataset_index", "file": "dataset_index.npy", "dtype": "<i8", "shape": []int{2}},
		{"name": "frame_index", "file": "frame_index.npy", "dtype": "<i8", "shape": []int{2}},
		{"name": "aug.crop", "file": "aug.crop.npy", "dtype": "<f4", "shape": []int{2, 4}},
	}
	plan := map[string]any{"datasets": []map[string]any{
		{"name": "a", "source": "hf://datasets/me/private?token=hf_SECRET", "split": "train", "weight": 0.75},
		{"name": "b", "source": "s3://bucket/b", "split": "train", "weight": 0.25},
	}}
	writeJSON(t, filepath.Join(dir, "info.json"), map[string]any{
		"batch_size": 2, "num_batches": 1, "rank": 0, "world": 1, "action_dim": 2,
		"config": map[string]any{"layout": "BFHWC", "datasets": []map[string]any{
			{"name": "a", "source": "https://user:hf_SECRET@example.com/a"}, {"name": "b", "source": "s3://bucket/b"},
		}, "hf_token": "hf_SECRET"},
		"sample": map[string]any{
			"slots":         []map[string]any{{"name": "cam", "size": []int{4, 3}, "deltas": []int{-1, 0}}},
			"action_deltas": []int{0, 1, 2},
			"arrays":        arrays,
		},
		"train": map[string]any{"num_batches": 1, "plan": plan},
		"val":   nil,
	})
	writeJSON(t, filepath.Join(dir, "stats.json"), map[string]any{
		"samples_per_dataset": map[string]int64{"a": 6, "b": 2},
		"substitutions":       map[string]int64{"short_episode": 1},
		"bad_episodes":        []map[string]string{{"episode": "b/train/0/3", "reason": "short_episode"}},
	})
	stepMountInto(t, dir)
	return dir
}

// stepMountInto writes stepMount's train batch 0 into dir/batches.
func stepMountInto(t *testing.T, dir string) {
	t.Helper()
	b := filepath.Join(dir, "batches", "000000.")
	pix := make([]byte, 2*2*4*3*3)
	for i := range pix {
		pix[i] = byte(i)
	}
	writeNPY(t, b+"observation.images.cam.npy", "|u1", []int{2, 2, 4, 3, 3}, pix)
	writeNPY(t, b+"observation.images.cam_is_pad.npy", "|b1", []int{2, 2}, boolbytes([]bool{true, false, true, true}))
	writeNPY(t, b+"image_mask.npy", "|b1", []int{2, 1}, boolbytes([]bool{true, false}))
	writeNPY(t, b+"action.npy", "<f4", []int{2, 3, 2}, f32bytes([]float32{0.1, -2.5, 1e-7, float32(math.NaN()), 3, 4, 5, 6, 7, 8, 9, 10}))
	writeNPY(t, b+"action_is_pad.npy", "|b1", []int{2, 3}, boolbytes([]bool{false, false, true, false, false, false}))
	writeNPY(t, b+"action_mask.npy", "|b1", []int{2, 2}, boolbytes([]bool{true, false, true, true}))
	writeNPY(t, b+"dataset_index.npy", "<i8", []int{2}, i64bytes([]int64{1, 0}))
	writeNPY(t, b+"frame_index.npy", "<i8", []int{2}, i64bytes([]int64{0, 17}))
	writeNPY(t, b+"aug.crop.npy", "<f4", []int{2, 4}, f32bytes([]float32{0, 0, 1, 1, 0.25, 0.5, 0.5, 0.5}))
	writeJSON(t, b+"json", map[string]any{"dataset_name": []string{"b", "a"}, "episode_id": []string{"b/train/0/1", "a/train/1/0"}, "task": []string{"pick", "place"}})
}

func newTestServer(t *testing.T, dir string) *httptest.Server {
	t.Helper()
	m, err := OpenMount(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	srv := httptest.NewServer(NewServer(m, Options{}))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestBatchValues(t *testing.T) {
	srv := newTestServer(t, stepMount(t))
	code, body := get(t, srv.URL+"/api/batch?n=0")
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	var b struct {
		Mode    string `json:"mode"`
		Extra   []struct{ Name string }
		Samples []struct {
			Dataset string
			Episode string
			T       int64
			Task    string
			Slots   []struct {
				IsPad []bool `json:"is_pad"`
				Mask  bool
			}
			Action struct {
				Values [][]any
				IsPad  []bool `json:"is_pad"`
				Mask   []bool
			}
			Extra map[string][]float32
		}
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	if b.Mode != "steps" || len(b.Samples) != 2 {
		t.Fatalf("mode %q, %d samples", b.Mode, len(b.Samples))
	}
	s0, s1 := b.Samples[0], b.Samples[1]
	tests := []struct {
		name      string
		got, want any
	}{
		{"dataset", []string{s0.Dataset, s1.Dataset}, []string{"b", "a"}},
		{"episode", s1.Episode, "a/train/1/0"},
		{"t", s1.T, int64(17)},
		{"task", s0.Task, "pick"},
		{"cam is_pad 0", s0.Slots[0].IsPad, []bool{true, false}},
		{"image_mask", []bool{s0.Slots[0].Mask, s1.Slots[0].Mask}, []bool{true, false}},
		{"action values 0", s0.Action.Values, [][]any{{0.1, -2.5}, {1e-7, "NaN"}, {3.0, 4.0}}},
		{"action_is_pad 0", s0.Action.IsPad, []bool{false, false, true}},
		{"action_mask 0", s0.Action.Mask, []bool{true, false}},
		{"extra arrays", len(b.Extra) == 1 && b.Extra[0].Name == "aug.crop", true},
		{"extra of sample 1", s1.Extra["aug.crop"], []float32{0.25, 0.5, 0.5, 0.5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := json.Marshal(tc.got)
			w, _ := json.Marshal(tc.want)
			if string(g) != string(w) {
				t.Errorf("got %s, want %s", g, w)
			}
		})
	}
	// The float32 values come back as the same float32.
	if v, ok := s0.Action.Values[1][0].(float64); !ok || float32(v) != 1e-7 {
		t.Errorf("action[0][1][0] = %v, want float32 1e-7", s0.Action.Values[1][0])
	}
}

func TestFrame(t *testing.T) {
	srv := newTestServer(t, stepMount(t))
	resp, err := http.Get(srv.URL + "/api/frame?n=0&sample=1&slot=cam&step=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("status %d, %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	img, err := png.Decode(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	// Sample 1, step 1 of [2, 2, 4, 3, 3]: bytes from (1*2+1)*36.
	base := (1*2 + 1) * 4 * 3 * 3
	for y := range 4 {
		for x := range 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			i := base + (y*3+x)*3
			if byte(r>>8) != byte(i) || byte(g>>8) != byte(i+1) || byte(bl>>8) != byte(i+2) {
				t.Fatalf("pixel (%d, %d) = %d %d %d, want %d %d %d", x, y, r>>8, g>>8, bl>>8, byte(i), byte(i+1), byte(i+2))
			}
		}
	}
}

func TestMixShares(t *testing.T) {
	srv := newTestServer(t, stepMount(t))
	code, body := get(t, srv.URL+"/api/mix")
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	var m mixView
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		share float64
		bad   int
	}{"a": {0.75, 0}, "b": {0.25, 1}}
	for _, d := range m.Train.Datasets {
		if d.Share != want[d.Name].share || len(d.Bad) != want[d.Name].bad {
			t.Errorf("%s: share %v, %d bad; want %v, %d", d.Name, d.Share, len(d.Bad), want[d.Name].share, want[d.Name].bad)
		}
	}
	if m.Val != nil {
		t.Errorf("val view %+v, want none", m.Val)
	}
}

// TestRefusals: every malformed or out-of-range request is a 4xx with
// its reason, and the server keeps answering.
func TestRefusals(t *testing.T) {
	srv := newTestServer(t, stepMount(t))
	tests := []struct {
		name, path string
		code       int
		says       string
	}{
		{"batch past the listing", "/api/batch?n=1", 400, "lists batches 0 to 0"},
		{"negative batch", "/api/batch?n=-1", 400, "not a batch number"},
		{"huge batch", "/api/batch?n=99999999999999999999", 400, "not a batch number"},
		{"bad rank", "/api/batch?rank=2", 400, "serves rank 0"},
		{"rank not a number", "/api/mix?rank=../..", 400, "not a rank number"},
		{"no val view", "/api/batch?view=val", 400, "no val view"},
		{"unknown view", "/api/batch?view=../../etc", 400, "train or val"},
		{"unknown parameter", "/api/batch?file=/etc/passwd", 400, "unknown parameter"},
		{"repeated parameter", "/api/mix?rank=0&rank=0", 400, "given 2 times"},
		{"hostile slot", "/api/frame?slot=../../../etc/passwd", 400, "the mix's slots are"},
		{"sample past the batch", "/api/frame?slot=cam&sample=2", 400, "samples 0 to 1"},
		{"step past the slot", "/api/frame?slot=cam&step=2", 400, "steps 0 to 1"},
		{"frame format", "/api/frame?slot=cam&format=gif", 400, "png or jpeg"},
		{"frame of a batch past the listing", "/api/frame?slot=cam&n=5", 400, "lists 1 batches"},
		{"no check report", "/api/check", 404, "no check report"},
		{"path outside the api", "/../../etc/passwd", 404, ""},
		{"asset that does not exist", "/assets/../../info.json", 404, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, srv.URL+tc.path)
			if code != tc.code || !strings.Contains(string(body), tc.says) {
				t.Errorf("%s: %d %s; want %d saying %q", tc.path, code, body, tc.code, tc.says)
			}
		})
	}
	t.Run("write refused", func(t *testing.T) {
		resp, err := http.Post(srv.URL+"/api/mix", "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST: %d, want 405", resp.StatusCode)
		}
	})
	t.Run("foreign Host on loopback", func(t *testing.T) {
		req, _ := http.NewRequest("GET", srv.URL+"/api/mix", nil)
		req.Host = "attacker.example:80"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("Host attacker.example: %d, want 403", resp.StatusCode)
		}
	})
	if code, _ := get(t, srv.URL+"/api/mix"); code != 200 {
		t.Errorf("after the refusals /api/mix answers %d", code)
	}
}

// TestNoSecrets: a token in a source URL or under a secret-named key never
// reaches the page.
func TestNoSecrets(t *testing.T) {
	srv := newTestServer(t, stepMount(t))
	for _, p := range []string{"/api/info", "/api/mix", "/api/stats", "/api/batch", "/"} {
		code, body := get(t, srv.URL+p)
		if code != 200 {
			t.Fatalf("%s: %d %s", p, code, body)
		}
		if strings.Contains(string(body), "SECRET") {
			t.Errorf("%s carries the token: %s", p, body)
		}
	}
	code, body := get(t, srv.URL+"/api/info")
	if code != 200 || !strings.Contains(string(body), `https://example.com/a`) || !strings.Contains(string(body), "s3://bucket/b") {
		t.Errorf("/api/info lost the sources themselves: %s", body)
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"gs://bucket/x/1.0.0", "gs://bucket/x/1.0.0"},
		{"/data/local", "/data/local"},
		{"https://u:p@host/a", "https://host/a"},
		{"https://host/a?X-Amz-Signature=abc&part=1", "https://host/a?part=1"},
		{"hf://datasets/o/n?token=hf_x", "hf://datasets/o/n"},
		{"plain text with :// inside", "(redacted URL)"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got := redactURL(tc.in)
			if got != tc.want {
				t.Errorf("redactURL(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestPageAssetsEmbedded(t *testing.T) {
	srv := newTestServer(t, stepMount(t))
	for _, p := range []string{"/", "/assets/app.js", "/assets/style.css"} {
		code, body := get(t, srv.URL+p)
		if code != 200 || len(body) < 100 {
			t.Errorf("%s: %d, %d bytes", p, code, len(body))
		}
	}
}

// TestBenchPlots: the live section serves an oxefs bench --out
// directory's pictures, and no other file of it.
func TestBenchPlots(t *testing.T) {
	bench := t.TempDir()
	if err := os.WriteFile(filepath.Join(bench, "latency.svg"), []byte("<svg>latency</svg>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bench, "summary.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := OpenMount(stepMount(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	srv := httptest.NewServer(NewServer(m, Options{BenchDir: bench}))
	defer srv.Close()
	tests := []struct {
		path string
		code int
		body string
	}{
		{"/api/bench", 200, `["latency.svg"]`},
		{"/api/bench/latency.svg", 200, "<svg>latency</svg>"},
		{"/api/bench/mixture_shares.svg", 404, "no such file"},
		{"/api/bench/summary.json", 404, "not here"},
		{"/api/bench/..%2Fsummary.json", 404, ""},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			code, body := get(t, srv.URL+tc.path)
			if code != tc.code || !strings.Contains(string(body), tc.body) {
				t.Errorf("%d %s; want %d with %q", code, body, tc.code, tc.body)
			}
		})
	}
}

// TestRanksAndVal: a mount of several ranks serves each rank's batches
// from rank/R/, a rank it lacks is refused naming those it has, and a
// rank with a val view serves val/batches/.
func TestRanksAndVal(t *testing.T) {
	top := t.TempDir()
	writeJSON(t, filepath.Join(top, "info.json"), map[string]any{"ranks": []int{0, 2}, "world": 4, "batch_size": 2, "num_batches": 1})
	for _, r := range []string{"0", "2"} {
		dir := stepMount(t)
		var info map[string]any
		b, err := os.ReadFile(filepath.Join(dir, "info.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &info); err != nil {
			t.Fatal(err)
		}
		info["rank"], _ = strconv.Atoi(r)
		info["val"] = info["train"]
		writeJSON(t, filepath.Join(dir, "info.json"), info)
		if err := os.MkdirAll(filepath.Join(dir, "val"), 0o755); err != nil {
			t.Fatal(err)
		}
		// The val view's batch 0 is rank r's train batch 0 with the task
		// text marked.
		if err := os.Rename(filepath.Join(dir, "batches"), filepath.Join(dir, "val", "batches")); err != nil {
			t.Fatal(err)
		}
		stepMountInto(t, dir)
		writeJSON(t, filepath.Join(dir, "val", "batches", "000000.json"), map[string]any{"dataset_name": []string{"b", "a"}, "task": []string{"val " + r, "x"}})
		if err := os.MkdirAll(filepath.Join(top, "rank"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dir, filepath.Join(top, "rank", r)); err != nil {
			t.Fatal(err)
		}
		if r == "0" {
			if err := os.Rename(filepath.Join(top, "rank", r, "stats.json"), filepath.Join(top, "stats.json")); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv := newTestServer(t, top)
	tests := []struct {
		path string
		code int
		says string
	}{
		{"/api/batch?rank=2&view=val", 200, `"task":"val 2"`},
		{"/api/batch?rank=0&view=val", 200, `"task":"val 0"`},
		{"/api/batch?rank=2", 200, `"task":"pick"`},
		{"/api/batch?rank=1", 400, "serves ranks [0 2]"},
		{"/api/frame?rank=2&view=val&slot=cam&sample=1&step=1", 200, "PNG"},
		{"/api/mix?rank=2", 200, `"rank":2`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			code, body := get(t, srv.URL+tc.path)
			if code != tc.code || !strings.Contains(string(body), tc.says) {
				t.Errorf("%d %.300s; want %d with %q", code, body, tc.code, tc.says)
			}
		})
	}
}

// TestPairBatchAugment: in pair mode the batch's other files that
// info.json lists (an augmented mix's augment.npy, one row of parameters
// per sample) are the batch's extras, each sample's row in its Extra;
// without them there are none.
func TestPairBatchAugment(t *testing.T) {
	row := func(i int) []float32 {
		r := make([]float32, 18)
		for j := range r {
			r[j] = float32(i) + float32(j)/32
		}
		return r
	}
	for _, tc := range []struct {
		name      string
		augmented bool
	}{{"augmented", true}, {"plain", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := []string{"npy"}
			if tc.augmented {
				files = append(files, "augment.npy")
			}
			writeJSON(t, filepath.Join(dir, "info.json"), map[string]any{
				"batch_size": 2, "num_batches": 1, "rank": 0, "world": 1, "action_dim": 1, "files": files,
				"frames": map[string]any{"shape": []int{2, 2, 4, 3, 3}, "layout": "BFHWC"},
				"config": map[string]any{"layout": "BFHWC", "datasets": []map[string]any{{"name": "a", "source": "/d/a"}}},
				"train":  map[string]any{"num_batches": 1},
				"val":    nil,
			})
			writeJSON(t, filepath.Join(dir, "stats.json"), map[string]any{})
			b := filepath.Join(dir, "batches", "000000.")
			writeNPY(t, b+"npy", "|u1", []int{2, 2, 4, 3, 3}, make([]byte, 2*2*4*3*3))
			if tc.augmented {
				writeNPY(t, b+"augment.npy", "<f4", []int{2, 18}, f32bytes(append(row(0), row(1)...)))
			}
			writeJSON(t, b+"json", map[string]any{"dataset_name": []string{"a", "a"}, "language": []string{"x", "y"}})
			code, body := get(t, newTestServer(t, dir).URL+"/api/batch?n=0")
			if code != 200 {
				t.Fatalf("status %d: %s", code, body)
			}
			var got struct {
				Mode  string `json:"mode"`
				Extra []struct {
					Name  string
					File  string
					Shape []int
				}
				Samples []struct {
					Extra map[string][]float32
				}
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.Mode != "pairs" || len(got.Samples) != 2 {
				t.Fatalf("mode %q, %d samples", got.Mode, len(got.Samples))
			}
			if !tc.augmented {
				if len(got.Extra) != 0 || got.Samples[1].Extra != nil {
					t.Errorf("extras without augmentation: %+v, %v", got.Extra, got.Samples[1].Extra)
				}
				return
			}
			if len(got.Extra) != 1 || got.Extra[0].Name != "augment" || got.Extra[0].File != "augment.npy" || fmt.Sprint(got.Extra[0].Shape) != "[2 18]" {
				t.Fatalf("extras %+v, want augment [2 18]", got.Extra)
			}
			for i, s := range got.Samples {
				if g, w := fmt.Sprint(s.Extra["augment"]), fmt.Sprint(row(i)); g != w {
					t.Errorf("sample %d's augment %s, want %s", i, g, w)
				}
			}
		})
	}
}
