package e2e

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/internal/missing"
	"github.com/oxefs/oxefs/internal/testkit"
)

// checkOutput is oxefs check --json.
type checkOutput struct {
	Datasets []struct {
		Name     string
		Split    string
		Episodes int
		Defects  []struct{ Kind, Episode, File, Detail string }
	}
	Defects int
}

func runCheck(t *testing.T, mix string) (checkOutput, string, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mix.yaml")
	if err := os.WriteFile(path, []byte(mix), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runOxefs(t, nil, "check", "--config", path, "--cache-dir", t.TempDir(), "--json")
	var out checkOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("oxefs check --json: %v\nstdout %s\nstderr %s", err, stdout, stderr)
	}
	return out, stderr, code
}

const checkMixHead = "seed: 0\nbatch_size: 8\nimage_size: [32, 32]\nsamples_per_episode: 1\ndatasets:\n"

const tinyBridge = `  - name: tiny_bridge
    source: %s
    split: train
    val_split: val
    image_key: steps/observation/image
    offset: 1
    action_keys: [steps/action/world_vector, steps/action/rotation_delta, steps/action/gripper_closedness_action]
    state_key: steps/observation/state
`

const tinyKuka = `  - name: tiny_kuka
    source: %s
    split: train
    val_split: test
    image_key: steps/observation/image
    offset: 1
    action_keys: [steps/action]
`

const tinyTable = `  - name: tiny_table
    source: %s
    split: train
    image_key: steps/observation/rgb
    offset: 1
    action_keys: [steps/action]
    state_key: steps/observation/effector_translation
`

const lerobotAV1 = `  - name: lerobot_av1
    source: %s
    split: train
    val_split: val
    image_key: observation.images.top
    offset: 1
    action_keys: [action]
    state_key: observation.state
`

func fill(format, path string) string { return strings.ReplaceAll(format, "%s", path) }

// tfrecordSpans returns where each record's data lies in a TFRecord file.
func tfrecordSpans(t *testing.T, b []byte) [][2]int {
	t.Helper()
	var out [][2]int
	for off := 0; off < len(b); {
		n := int(binary.LittleEndian.Uint64(b[off:]))
		out = append(out, [2]int{off + 12, off + 12 + n})
		off += 12 + n + 4
	}
	return out
}

// fixCRC rewrites the masked CRC-32C of a record's data after it changed.
func fixCRC(b []byte, span [2]int) {
	c := crc32.Checksum(b[span[0]:span[1]], crc32.MakeTable(crc32.Castagnoli))
	binary.LittleEndian.PutUint32(b[span[1]:], ((c>>15)|(c<<17))+0xa282ead8)
}

// featureValues finds feature key of the tf.train.Example at b[span] and
// returns where each of its values lies: each bytes value, or each
// packed float.
func featureValues(t *testing.T, b []byte, span [2]int, key string) [][2]int {
	t.Helper()
	var out [][2]int
	// fields calls f with each field of the message at [lo, hi): its
	// number and, for a length-delimited field, its content's span.
	fields := func(lo, hi int, f func(num protowire.Number, clo, chi int)) {
		for lo < hi {
			num, typ, n := protowire.ConsumeTag(b[lo:hi])
			if n < 0 {
				t.Fatalf("bad tag at %d", lo)
			}
			lo += n
			if typ != protowire.BytesType {
				m := protowire.ConsumeFieldValue(num, typ, b[lo:hi])
				lo += m
				continue
			}
			v, m := protowire.ConsumeBytes(b[lo:hi])
			f(num, lo+m-len(v), lo+m)
			lo += m
		}
	}
	fields(span[0], span[1], func(_ protowire.Number, lo, hi int) { // Example.features
		fields(lo, hi, func(_ protowire.Number, lo, hi int) { // Features.feature map entries
			var k string
			var feat [2]int
			fields(lo, hi, func(num protowire.Number, lo, hi int) {
				if num == 1 {
					k = string(b[lo:hi])
				} else {
					feat = [2]int{lo, hi}
				}
			})
			if k != key {
				return
			}
			fields(feat[0], feat[1], func(kind protowire.Number, lo, hi int) { // BytesList or FloatList
				fields(lo, hi, func(_ protowire.Number, lo, hi int) {
					if kind == 1 {
						out = append(out, [2]int{lo, hi})
						return
					}
					for p := lo; p+4 <= hi; p += 4 {
						out = append(out, [2]int{p, p + 4})
					}
				})
			})
		})
	})
	if len(out) == 0 {
		t.Fatalf("no feature %s in the record", key)
	}
	return out
}

// damageRLDS copies an RLDS fixture and lets damage change one record of
// one shard; the record's CRC is rewritten, so only the damage is wrong.
func damageRLDS(t *testing.T, name, shard string, record int, damage func(b []byte, span [2]int)) string {
	t.Helper()
	dir := testkit.CopyDir(t, filepath.Join("testdata", "datasets", name))
	path := filepath.Join(dir, "1.0.0", shard)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	span := tfrecordSpans(t, b)[record]
	damage(b, span)
	fixCRC(b, span)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(path)
}

// TestCheckFixtures: oxefs check reports nothing on the fixtures written
// by TFDS and lerobot, and finds each defect planted in a copy of them.
func TestCheckFixtures(t *testing.T) {
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	data := filepath.Join(testkit.Testdata(t), "datasets")
	t.Run("clean", func(t *testing.T) {
		mix := checkMixHead + fill(tinyBridge, filepath.Join(data, "tiny_bridge", "1.0.0")) + fill(tinyKuka, filepath.Join(data, "tiny_kuka", "1.0.0")) + fill(tinyTable, filepath.Join(data, "tiny_table", "1.0.0")) +
			fill(lerobotAV1, filepath.Join(testkit.Testdata(t), "lerobot", "lerobot_av1"))
		out, stderr, code := runCheck(t, mix)
		// tiny_bridge train and val, tiny_kuka train and test, tiny_table
		// train, lerobot_av1 train and val.
		if code != 0 || out.Defects != 0 || len(out.Datasets) != 7 {
			t.Fatalf("exit %d, %d defects in %d reports: %+v\n%s", code, out.Defects, len(out.Datasets), out.Datasets, stderr)
		}
		for _, d := range out.Datasets {
			if d.Episodes == 0 {
				t.Errorf("%s %s: no episode checked", d.Name, d.Split)
			}
		}
	})
	tests := []struct {
		name    string
		mix     func(t *testing.T) string
		kind    string
		episode string
		// file, when not "", is the file a defect found in a whole file
		// must name (the format's audit, not an episode's load).
		file string
	}{
		{"NaN action", func(t *testing.T) string {
			dir := damageRLDS(t, "tiny_kuka", "tiny_kuka-train.tfrecord-00000-of-00002", 1, func(b []byte, span [2]int) {
				v := featureValues(t, b, span, "steps/action")
				binary.LittleEndian.PutUint32(b[v[9][0]:], math.Float32bits(float32(math.NaN())))
			})
			return fill(tinyKuka, dir)
		}, "non_finite", "tiny_kuka/train/0/1", ""},
		{"frozen camera", func(t *testing.T) string {
			dir := damageRLDS(t, "tiny_bridge", "tiny_bridge-train.tfrecord-00001-of-00003", 2, func(b []byte, span [2]int) {
				v := featureValues(t, b, span, "steps/observation/image")
				// Steps k+1 and k+2 show step k's frame: its JPEG written over
				// theirs, the rest of their bytes left after its end marker
				// (decoders stop there), so each record keeps its length.
				for k := 0; k+2 < len(v); k++ {
					n := v[k][1] - v[k][0]
					if n <= v[k+1][1]-v[k+1][0] && n <= v[k+2][1]-v[k+2][0] {
						copy(b[v[k+1][0]:], b[v[k][0]:v[k][1]])
						copy(b[v[k+2][0]:], b[v[k][0]:v[k][1]])
						return
					}
				}
				t.Fatalf("no three steps whose first frame fits over the next two")
			})
			return fill(tinyBridge, dir)
		}, "frozen", "tiny_bridge/train/1/2", ""},
		{"episode shorter than the offset", func(t *testing.T) string {
			return strings.Replace(fill(tinyTable, filepath.Join(data, "tiny_table", "1.0.0")), "offset: 1", "offset: 9", 1)
		}, "short", "", ""},
		{"LeRobot timestamps swapped", func(t *testing.T) string {
			dir := testkit.CopyDir(t, filepath.Join(testkit.Testdata(t), "lerobot", "lerobot_av1"))
			swapTimestamps(t, filepath.Join(dir, "data", "chunk-000", "file-000.parquet"), 2, 3)
			return fill(lerobotAV1, dir)
		}, "timestamp", "lerobot_av1/train/episode_000000", ""},
		{"LeRobot video cut short: the frames of its last episode dropped", func(t *testing.T) string {
			return fill(lerobotAV1, testkit.LeRobotDamaged(t, "truncated_mp4"))
		}, "frame_count", "lerobot_av1/val/", ""},
		{"LeRobot episode past its video's end", func(t *testing.T) string {
			return fill(lerobotAV1, testkit.LeRobotDamaged(t, "past_video_end"))
		}, "frame_count", "lerobot_av1/val/", ""},
		// The rows appended at the end of a data file: every episode still
		// loads (its rows are where the episode table says), so only the
		// audit of the whole file sees them.
		{"LeRobot orphaned row: an episode meta/episodes does not list", func(t *testing.T) string {
			return fill(lerobotAV1, testkit.LeRobotOrphanRow(t, 99))
		}, "orphaned_row", "", testkit.LeRobotDataFile},
		{"LeRobot orphaned row: one row too many for its episode", func(t *testing.T) string {
			return fill(lerobotAV1, testkit.LeRobotOrphanRow(t, 2))
		}, "orphaned_row", "", testkit.LeRobotDataFile},
		// Sample 15 of the top camera's first file (episode 1, step 3)
		// dropped. Its times kept, the episode cannot load (no frame for
		// step 3) and the audit names where the frames jump; moved up, the
		// last episode of the file runs past its end and only the audit's
		// frame count says which file lost a frame.
		{"LeRobot frame dropped mid-video, the others keeping their times", func(t *testing.T) string {
			return fill(lerobotAV1, testkit.LeRobotDroppedFrame(t, 15, false))
		}, "frame_count", "", testkit.LeRobotTopVideo},
		{"LeRobot frame dropped mid-video, the later ones moved up", func(t *testing.T) string {
			return fill(lerobotAV1, testkit.LeRobotDroppedFrame(t, 15, true))
		}, "frame_count", "", testkit.LeRobotTopVideo},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runCheck(t, checkMixHead+tc.mix(t))
			if code != 1 || out.Defects == 0 {
				t.Fatalf("exit %d with %d defects, want 1 and the planted one:\n%s", code, out.Defects, stderr)
			}
			inFile := 0
			for _, d := range out.Datasets {
				for _, x := range d.Defects {
					if x.Kind != tc.kind || !strings.HasPrefix(x.Episode, tc.episode) && x.File == "" {
						t.Errorf("defect %+v, want only %s in %s", x, tc.kind, tc.episode)
					}
					if x.File != "" && x.File != tc.file {
						t.Errorf("defect %+v in %s, want one in %q", x, x.File, tc.file)
					}
					if tc.file != "" && x.File == tc.file {
						inFile++
					}
				}
			}
			if tc.file != "" && inFile == 0 {
				t.Errorf("no defect names %s", tc.file)
			}
			t.Logf("%d defects, the first: %+v", out.Defects, firstDefect(out))
		})
	}
}

// swapTimestamps rewrites a LeRobot data file with the timestamps of rows
// i and j swapped, every other value as it was.
func swapTimestamps(t *testing.T, path string, i, j int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	col, ok := pf.Schema().Lookup("timestamp")
	if !ok {
		t.Fatalf("%s has no timestamp column", path)
	}
	r := parquet.NewReader(pf)
	rows := make([]parquet.Row, pf.NumRows())
	n, err := r.ReadRows(rows)
	if n != len(rows) {
		t.Fatalf("read %d of %d rows: %v", n, len(rows), err)
	}
	f.Close()
	// A row holds its values flattened, column by column (a list column
	// gives several): the timestamp is the value of its column.
	at := func(row parquet.Row) int {
		for k, v := range row {
			if v.Column() == col.ColumnIndex {
				return k
			}
		}
		t.Fatalf("a row without its timestamp")
		return -1
	}
	a, b := &rows[i][at(rows[i])], &rows[j][at(rows[j])]
	if a.Float() == b.Float() {
		t.Fatalf("rows %d and %d have the same timestamp", i, j)
	}
	*a, *b = parquet.FloatValue(b.Float()).Level(a.RepetitionLevel(), a.DefinitionLevel(), col.ColumnIndex),
		parquet.FloatValue(a.Float()).Level(b.RepetitionLevel(), b.DefinitionLevel(), col.ColumnIndex)
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewWriter(out, pf.Schema())
	if _, err := w.WriteRows(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func firstDefect(out checkOutput) any {
	for _, d := range out.Datasets {
		if len(d.Defects) > 0 {
			return d.Defects[0]
		}
	}
	return nil
}
