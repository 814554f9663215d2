package e2e

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/missing"
)

// requireChromium returns Debian's chromium, or skips the test.
func requireChromium(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		missing.Skip(t, missing.Chromium, err)
	}
	return p
}

// chromium runs headless chromium on url with extra flags and returns
// its stdout and the console messages it logged. Virtual time lets the
// page finish every fetch before the DOM is dumped.
func chromium(t *testing.T, bin, url string, flags ...string) (string, []string) {
	t.Helper()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0", "--virtual-time-budget=30000"}, flags...)
	cmd := exec.Command(bin, append(args, url)...)
	var out strings.Builder
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var console []string
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), ":CONSOLE") {
			console = append(console, sc.Text())
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chromium %s: %v", url, err)
	}
	return out.String(), console
}

// viewURL is the page's address, as the daemon (or oxefs view) logged it.
var viewURLRE = regexp.MustCompile(`msg="view: serving the page" url=(\S+)`)

func viewURL(t *testing.T, log string) string {
	t.Helper()
	m := viewURLRE.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no view URL in the log:\n%s", log)
	}
	return m[1]
}

// npyValues reads a .npy of |b1, |u1, <i8, <f4 or <f8 as float64 values,
// with its shape.
func npyValues(t *testing.T, path string) ([]int, []float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" || b[6] != 1 {
		t.Fatalf("%s: not a NumPy 1.0 file", path)
	}
	hl := int(binary.LittleEndian.Uint16(b[8:]))
	h := string(b[10 : 10+hl])
	descr := regexp.MustCompile(`'descr': '([^']+)'`).FindStringSubmatch(h)
	sh := regexp.MustCompile(`'shape': \(([^)]*)\)`).FindStringSubmatch(h)
	if descr == nil || sh == nil {
		t.Fatalf("%s: header %q", path, h)
	}
	var shape []int
	for _, f := range strings.Split(sh[1], ",") {
		if f = strings.TrimSpace(f); f != "" {
			d, _ := strconv.Atoi(f)
			shape = append(shape, d)
		}
	}
	data := b[10+hl:]
	var out []float64
	switch descr[1] {
	case "|b1", "|u1":
		for _, x := range data {
			out = append(out, float64(x))
		}
	case "<i8":
		for i := 0; i+8 <= len(data); i += 8 {
			out = append(out, float64(int64(binary.LittleEndian.Uint64(data[i:]))))
		}
	case "<f4":
		for i := 0; i+4 <= len(data); i += 4 {
			out = append(out, float64(math.Float32frombits(binary.LittleEndian.Uint32(data[i:]))))
		}
	case "<f8":
		for i := 0; i+8 <= len(data); i += 8 {
			out = append(out, math.Float64frombits(binary.LittleEndian.Uint64(data[i:])))
		}
	default:
		t.Fatalf("%s: dtype %s", path, descr[1])
	}
	return shape, out
}

// pageSlot is a camera slot of a sample as the page drew it.
type pageSlot struct {
	mask   string
	steps  []string // data-step of each frame, in order
	pads   []string // data-pad of each frame
	loaded []string // data-loaded of each frame's image
}

// pageChart is one dimension of the action or state as the page plotted it.
type pageChart struct {
	mask   string
	values []string // data-values of its curve
	shaded []string // data-step of each shaded (padded) step
}

var (
	slotRE    = regexp.MustCompile(`<div class="slot" data-slot="([^"]+)" data-mask="([01])">`)
	figureRE  = regexp.MustCompile(`<figure class="[^"]*" data-step="(\d+)" data-delta="-?\d+" data-pad="([01])"><img [^>]*data-loaded="([^"]*)"`)
	chartRE   = regexp.MustCompile(`<div class="chart[^"]*" data-series="(\w+)" data-dim="(\d+)" data-mask="([01])">`)
	shadeRE   = regexp.MustCompile(`<rect class="padshade" data-step="(\d+)"`)
	valuesRE  = regexp.MustCompile(`<polyline [^>]*data-values="([^"]*)"`)
	shareRE   = regexp.MustCompile(`<tr data-dataset="([^"]+)" data-target="([^"]+)" data-share="([^"]+)" data-samples="(\d+)">`)
	readyRE   = regexp.MustCompile(`<body [^>]*data-ready="([^"]*)"`)
	errorsRE  = regexp.MustCompile(`(?s)<pre id="errors"[^>]*>(.*?)</pre>`)
	sample0RE = regexp.MustCompile(`(?s)<div class="sample[^"]*" data-sample="0".*?(?:<div class="sample[^"]*" data-sample="1"|</section>)`)
)

// parseSample0 reads sample 0's slots and charts from the page's DOM.
func parseSample0(t *testing.T, dom string) (map[string]pageSlot, map[string]pageChart) {
	t.Helper()
	card := sample0RE.FindString(dom)
	if card == "" {
		t.Fatalf("no sample 0 on the page")
	}
	slots := map[string]pageSlot{}
	idx := slotRE.FindAllStringSubmatchIndex(card, -1)
	for i, m := range idx {
		end := len(card)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		part := card[m[1]:end]
		if c := strings.Index(part, `<div class="chart`); c >= 0 {
			part = part[:c]
		}
		s := pageSlot{mask: card[m[4]:m[5]]}
		for _, f := range figureRE.FindAllStringSubmatch(part, -1) {
			s.steps = append(s.steps, f[1])
			s.pads = append(s.pads, f[2])
			s.loaded = append(s.loaded, f[3])
		}
		slots[card[m[2]:m[3]]] = s
	}
	charts := map[string]pageChart{}
	cidx := chartRE.FindAllStringSubmatchIndex(card, -1)
	for i, m := range cidx {
		end := len(card)
		if i+1 < len(cidx) {
			end = cidx[i+1][0]
		}
		part := card[m[1]:end]
		c := pageChart{mask: card[m[6]:m[7]]}
		for _, s := range shadeRE.FindAllStringSubmatch(part, -1) {
			c.shaded = append(c.shaded, s[1])
		}
		if v := valuesRE.FindStringSubmatch(part); v != nil {
			c.values = strings.Fields(v[1])
		}
		charts[card[m[2]:m[3]]+"/"+card[m[4]:m[5]]] = c
	}
	return slots, charts
}

func bits(v []float64) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = strconv.Itoa(int(x))
	}
	return out
}

func steps(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

// sameFloats compares the page's values with the batch's, each parsed as
// a value of the array's type (bitSize 32 for float32 arrays).
func sameFloats(page []string, want []float64, bitSize int) error {
	if len(page) != len(want) {
		return fmt.Errorf("%d values on the page, %d in the batch", len(page), len(want))
	}
	for i, s := range page {
		v, err := strconv.ParseFloat(s, bitSize)
		if err != nil {
			return fmt.Errorf("value %d %q: %v", i, s, err)
		}
		if v != want[i] && !(math.IsNaN(v) && math.IsNaN(want[i])) {
			return fmt.Errorf("value %d: page %s, batch %v", i, s, want[i])
		}
	}
	return nil
}

// artifactDir is where the tests keep what a person looks at afterwards
// (the page's screenshots): $OXEFS_TEST_ARTIFACTS, else a directory in
// the system's temp directory that outlives the test.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("OXEFS_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "oxefs-test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestViewPage loads the page from a real mount of oxefs synth data, in
// pair mode and step mode, in headless chromium, and checks from the DOM
// that every slot and history step of sample 0 is drawn, that the pad
// and mask markings match the batch's arrays, that the plotted values
// equal the batch's (read from the page's data attributes, not pixels),
// that the realised shares equal those counted from the batches built,
// and that the console shows no error. It keeps a screenshot of each
// page and logs how long the page took.
func TestViewPage(t *testing.T) {
	chrome := requireChromium(t)
	data := t.TempDir()
	// Episodes of 30 steps under a chunk of 50: the chunk's end is padded.
	if _, stderr, code := runOxefs(t, nil, "synth", data, "--datasets", "6", "--episodes", "4", "--steps", "30"); code != 0 {
		t.Fatalf("synth: %s", stderr)
	}
	// Unequal weights (2/7 and five of 1/7), so that the realised shares
	// over a few batches differ from the targets.
	for _, mix := range []string{"mix.yaml", "mix-steps.yaml"} {
		b, err := os.ReadFile(filepath.Join(data, mix))
		if err != nil {
			t.Fatal(err)
		}
		b = []byte(strings.Replace(string(b), "weight: 1.0", "weight: 2.0", 1))
		if err := os.WriteFile(filepath.Join(data, mix), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const built = 3 // batches read before the page loads
	for _, tc := range []struct {
		name, mix string
		steps     bool
	}{
		{"pairs", "mix.yaml", false},
		{"steps", "mix-steps.yaml", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := filepath.Join(t.TempDir(), "mnt")
			d := startMount(t, mnt, nil, "--config", filepath.Join(data, tc.mix), "--cache-dir", t.TempDir(),
				"--mem", "1GiB", "--readahead", "0", "--view", "127.0.0.1:0")
			url := viewURL(t, d.stderr())

			// Build batches 0..built-1 by reading them, and count each
			// dataset's samples from their metadata.
			counts := map[string]int{}
			total := 0
			for n := range built {
				entries, err := filepath.Glob(filepath.Join(mnt, "batches", fmt.Sprintf("%06d.*", n)))
				if err != nil || len(entries) == 0 {
					t.Fatalf("batch %d: %v", n, err)
				}
				for _, e := range entries {
					if _, err := os.ReadFile(e); err != nil {
						t.Fatal(err)
					}
				}
				var meta struct {
					DatasetName []string `json:"dataset_name"`
				}
				readJSON(t, filepath.Join(mnt, "batches", fmt.Sprintf("%06d.json", n)), &meta)
				for _, name := range meta.DatasetName {
					counts[name]++
					total++
				}
			}

			dom, console := chromium(t, chrome, url+"?n=0&samples=64&live=0&timing=1", "--dump-dom")
			timing, console := pageTiming(t, console)
			if m := readyRE.FindStringSubmatch(dom); m == nil || m[1] != "1" {
				t.Fatalf("the page is not ready (data-ready %v)", m)
			}
			if m := errorsRE.FindStringSubmatch(dom); m == nil || strings.TrimSpace(m[1]) != "" {
				t.Errorf("the page reports errors: %v", m)
			}
			if len(console) > 0 {
				t.Errorf("console messages:\n%s", strings.Join(console, "\n"))
			}

			slots, charts := parseSample0(t, dom)
			batch := func(name string) string { return filepath.Join(mnt, "batches", "000000."+name) }
			type want struct {
				mask string
				pads []string
			}
			wantSlots := map[string]want{}
			var info struct {
				Frames *struct{ Shape []int }
				Sample *struct {
					Slots []struct {
						Name   string
						Deltas []int
					}
				}
				Train struct {
					Plan struct {
						Datasets []struct {
							Name   string
							Weight float64
						}
					}
				}
			}
			readJSON(t, filepath.Join(mnt, "info.json"), &info)
			if tc.steps {
				_, mask := npyValues(t, batch("image_mask.npy"))
				for k, s := range info.Sample.Slots {
					_, pad := npyValues(t, batch("observation.images."+s.Name+"_is_pad.npy"))
					T := len(s.Deltas)
					wantSlots[s.Name] = want{bits(mask[k : k+1])[0], bits(pad[:T])}
				}
			} else {
				wantSlots["frames"] = want{"1", slices.Repeat([]string{"0"}, info.Frames.Shape[1])}
			}
			for name, w := range wantSlots {
				got, ok := slots[name]
				switch {
				case !ok:
					t.Errorf("slot %s of sample 0 is not on the page", name)
				case !slices.Equal(got.steps, steps(len(w.pads))):
					t.Errorf("slot %s: the page draws steps %v, want %v", name, got.steps, steps(len(w.pads)))
				case !slices.Equal(got.pads, w.pads):
					t.Errorf("slot %s: pad markings %v, batch _is_pad %v", name, got.pads, w.pads)
				case got.mask != w.mask:
					t.Errorf("slot %s: mask marking %s, batch image_mask %s", name, got.mask, w.mask)
				case slices.ContainsFunc(got.loaded, func(s string) bool { return s != "1" }):
					t.Errorf("slot %s: frames not drawn: %v", name, got.loaded)
				}
			}
			if len(slots) != len(wantSlots) {
				t.Errorf("the page draws slots %v, the batch has %d", slices.Collect(mapKeys(slots)), len(wantSlots))
			}

			// The plotted action chunk (and state) per dimension.
			type series struct {
				name   string
				values [][]float64 // [step][dim]
				pads   []string
				masks  []string
				bits   int
			}
			var want2 []series
			if tc.steps {
				for _, s := range []struct{ name, file, pad, mask string }{
					{"action", "action.npy", "action_is_pad.npy", "action_mask.npy"},
					{"state", "observation.state.npy", "observation.state_is_pad.npy", "state_mask.npy"},
				} {
					shape, v := npyValues(t, batch(s.file))
					_, pad := npyValues(t, batch(s.pad))
					_, mask := npyValues(t, batch(s.mask))
					T, D := shape[1], shape[2]
					sr := series{name: s.name, bits: 32, masks: bits(mask[:D])}
					for k := range T {
						sr.values = append(sr.values, v[k*D:(k+1)*D])
						if pad[k] != 0 {
							sr.pads = append(sr.pads, strconv.Itoa(k))
						}
					}
					want2 = append(want2, sr)
				}
			} else {
				var meta struct {
					Action       [][]float64 `json:"action"`
					ActionMask   [][]float64 `json:"action_mask"`
					InitialState [][]float64 `json:"initial_state"`
					StateMask    [][]float64 `json:"state_mask"`
				}
				readJSON(t, batch("json"), &meta)
				want2 = append(want2,
					series{name: "action", values: [][]float64{meta.Action[0]}, masks: bits(meta.ActionMask[0]), bits: 64},
					series{name: "state", values: [][]float64{meta.InitialState[0]}, masks: bits(meta.StateMask[0]), bits: 64})
			}
			for _, s := range want2 {
				for dim := range s.values[0] {
					c, ok := charts[fmt.Sprintf("%s/%d", s.name, dim)]
					if !ok {
						t.Errorf("%s[%d] of sample 0 is not plotted", s.name, dim)
						continue
					}
					col := make([]float64, len(s.values))
					for k := range s.values {
						col[k] = s.values[k][dim]
					}
					if err := sameFloats(c.values, col, s.bits); err != nil {
						t.Errorf("%s[%d]: %v", s.name, dim, err)
					}
					if !slices.Equal(c.shaded, s.pads) {
						t.Errorf("%s[%d]: shaded steps %v, batch's padded steps %v", s.name, dim, c.shaded, s.pads)
					}
					if c.mask != s.masks[dim] {
						t.Errorf("%s[%d]: mask %s, batch %s", s.name, dim, c.mask, s.masks[dim])
					}
				}
			}
			if tc.steps && len(want2[0].pads) == 0 {
				t.Errorf("sample 0's chunk has no padded step: the test shows no shading")
			}

			// The realised shares over the batches built.
			rows := shareRE.FindAllStringSubmatch(strings.SplitN(dom, `data-view="val"`, 2)[0], -1)
			if len(rows) != len(info.Train.Plan.Datasets) {
				t.Fatalf("%d datasets in the mix table, %d in the plan", len(rows), len(info.Train.Plan.Datasets))
			}
			for i, r := range rows {
				share, _ := strconv.ParseFloat(r[3], 64)
				target, _ := strconv.ParseFloat(r[2], 64)
				wantShare := float64(counts[r[1]]) / float64(total)
				if math.Abs(share-wantShare) > 1e-12 || r[4] != strconv.Itoa(counts[r[1]]) {
					t.Errorf("%s: realised share %v (%s samples) on the page, %v (%d of %d) in batches 0..%d", r[1], share, r[4], wantShare, counts[r[1]], total, built-1)
				}
				if p := info.Train.Plan.Datasets[i]; p.Name != r[1] || p.Weight != target {
					t.Errorf("row %d: %s target %v, plan %s %v", i, r[1], target, p.Name, p.Weight)
				}
				if share == target {
					t.Errorf("%s: realised share %v equals the target: the test cannot tell them apart", r[1], share)
				}
			}

			// How long the page took (reported, never asserted): the batch's
			// JSON in, its 64 cards in the DOM, the frames of the first
			// four samples (more than an 800×600 window shows) loaded,
			// every section ready, and the other cards' charts drawn.
			t.Logf("page of batch 0 (%s, 64 samples: the first 4 drawn whole, their frames loaded, then the other cards' charts, their frames as scrolled to): %s", tc.name, timing)

			// The cards drawn after the first screen are all drawn: their
			// charts, and their frames' sources given to the browser (which
			// fetches them as they are scrolled near); no frame refused.
			if n := strings.Count(dom, `data-charts="1"`); n != 64 || strings.Contains(dom, "data-src=") || strings.Contains(dom, `data-loaded="error"`) {
				t.Errorf("%d cards of 64 drawn, frames not given to the browser %v, a frame refused %v",
					n, strings.Contains(dom, "data-src="), strings.Contains(dom, `data-loaded="error"`))
			}

			// A screenshot, kept.
			shot := filepath.Join(artifactDir(t), "view-"+tc.name+".png")
			chromium(t, chrome, url+"?n=0&samples=3&live=0", "--screenshot="+shot, "--window-size=1280,1600", "--hide-scrollbars")
			if st, err := os.Stat(shot); err != nil || st.Size() == 0 {
				t.Errorf("screenshot %s: %v", shot, err)
			}
			t.Logf("screenshot: %s", shot)

			// Hostile requests through the real mount: 4xx, and the daemon
			// keeps serving.
			for _, q := range []string{"api/batch?n=99999999", "api/batch?rank=7", "api/frame?slot=../../info.json", "api/batch?view=../etc", "api/frame?n=0&sample=64"} {
				resp, err := http.Get(url + q)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode < 400 || resp.StatusCode >= 500 {
					t.Errorf("%s: %d %s, want a 4xx", q, resp.StatusCode, body)
				}
			}
			var st map[string]any
			readJSON(t, filepath.Join(mnt, "stats.json"), &st)

			if tc.steps {
				t.Run("oxefs view MOUNT", func(t *testing.T) { testViewCommand(t, chrome, mnt) })
				t.Run("episode scrubber", func(t *testing.T) { testScrubber(t, chrome, url, mnt) })
			}
		})
	}
}

// pageTiming takes the page's timing marks (console.info lines
// "oxefs-view-timing WHAT", which the page writes with timing=1) out of
// chromium's console lines, and says how long after the script started
// each came, from chromium's own log clock.
func pageTiming(t *testing.T, console []string) (string, []string) {
	t.Helper()
	re := regexp.MustCompile(`/(\d{6}\.\d{6}):INFO:CONSOLE[^"]*"oxefs-view-timing ([a-z ]+)`)
	var rest, marks []string
	var start time.Time
	for _, line := range console {
		m := re.FindStringSubmatch(line)
		if m == nil {
			rest = append(rest, line)
			continue
		}
		at, err := time.Parse("150405.000000", m[1])
		if err != nil {
			t.Fatal(err)
		}
		if m[2] == "start" {
			start = at
			continue
		}
		marks = append(marks, fmt.Sprintf("%s at %v", m[2], at.Sub(start).Round(time.Millisecond)))
	}
	if len(marks) == 0 {
		t.Errorf("no timing marks from the page")
	}
	return strings.Join(marks, ", "), rest
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// testViewCommand runs `oxefs view MOUNT` beside the daemon and reads the
// mix and a batch through it, and scrubs an episode with its page.
func testViewCommand(t *testing.T, chrome, mnt string) {
	cmd := exec.Command(oxefsBin, "view", mnt, "--addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("oxefs view after SIGINT: %v", err)
		}
	}()
	sc := bufio.NewScanner(stderr)
	url := ""
	for url == "" && sc.Scan() {
		if m := viewURLRE.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatalf("oxefs view logged no URL")
	}
	go io.Copy(io.Discard, stderr)
	for q, code := range map[string]int{"api/mix": 200, "api/batch?n=1": 200, "api/batch?n=-3": 400} {
		resp, err := http.Get(url + q)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("oxefs view %s: %d %v, want %d", q, resp.StatusCode, body, code)
		}
	}
	// The scrubber too: oxefs view opens the datasets of the config the
	// mount's info.json records.
	t.Run("episode scrubber", func(t *testing.T) { testScrubber(t, chrome, url, mnt) })
}

// testScrubber opens sample 0's episode in the page's episode scrubber and
// checks that each camera's frame is drawn and that the episode's action
// curves, at the steps of sample 0's chunk that are not padding, equal the
// batch's action chunk: the scrubber reads the source as the batches do.
func testScrubber(t *testing.T, chrome, url, mnt string) {
	var meta struct {
		EpisodeID []string `json:"episode_id"`
	}
	batch := func(name string) string { return filepath.Join(mnt, "batches", "000000."+name) }
	readJSON(t, batch("json"), &meta)
	id := meta.EpisodeID[0]
	_, tv := npyValues(t, batch("frame_index.npy"))
	shape, action := npyValues(t, batch("action.npy"))
	_, pad := npyValues(t, batch("action_is_pad.npy"))
	_, mask := npyValues(t, batch("action_mask.npy"))
	T0, H, A := int(tv[0]), shape[1], shape[2]

	dom, console := chromium(t, chrome, url+"?n=0&samples=1&live=0&episode="+id, "--dump-dom")
	if len(console) > 0 {
		t.Errorf("console messages:\n%s", strings.Join(console, "\n"))
	}
	m := regexp.MustCompile(`<div class="episode-view" data-episode="([^"]+)" data-steps="(\d+)"`).FindStringSubmatch(dom)
	if m == nil || m[1] != id {
		t.Fatalf("the scrubber shows %v, want episode %s", m, id)
	}
	cams := regexp.MustCompile(`<figure class="frame" data-camera="([^"]+)"><img [^>]*data-loaded="([^"]*)"`).FindAllStringSubmatch(dom, -1)
	if len(cams) == 0 {
		t.Errorf("no camera in the scrubber")
	}
	for _, c := range cams {
		if c[2] != "1" {
			t.Errorf("camera %s: frame not drawn (%s)", c[1], c[2])
		}
	}
	values := map[int][]string{}
	for _, c := range regexp.MustCompile(`data-series="episode-action" data-dim="(\d+)"[^>]*>.*?data-values="([^"]*)"`).FindAllStringSubmatch(dom, -1) {
		d, _ := strconv.Atoi(c[1])
		values[d] = strings.Fields(c[2])
	}
	compared := 0
	for d := range A {
		if mask[d] == 0 {
			continue
		}
		for k := range H {
			if pad[k] != 0 {
				continue
			}
			got := values[d]
			if T0+k >= len(got) {
				t.Fatalf("action[%d] has %d steps on the page; sample 0 reads step %d", d, len(got), T0+k)
			}
			if err := sameFloats(got[T0+k:T0+k+1], action[k*A+d:k*A+d+1], 32); err != nil {
				t.Errorf("action[%d] at step %d (chunk step %d): %v", d, T0+k, k, err)
			}
			compared++
		}
	}
	if compared == 0 {
		t.Errorf("nothing compared: sample 0's chunk is all padding")
	}
}
