package testkit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// ReadNPY reads a NumPy .npy file of dtype |u1 in C order: its shape and
// its data.
func ReadNPY(t testing.TB, path string) (shape []int, data []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" {
		t.Fatalf("%s: not a .npy file", path)
	}
	var hlen, off int
	switch b[6] {
	case 1:
		hlen, off = int(b[8])|int(b[9])<<8, 10
	case 2, 3:
		hlen, off = int(b[8])|int(b[9])<<8|int(b[10])<<16|int(b[11])<<24, 12
	default:
		t.Fatalf("%s: .npy version %d", path, b[6])
	}
	header := string(b[off : off+hlen])
	if !strings.Contains(header, "'descr': '|u1'") || !strings.Contains(header, "'fortran_order': False") {
		t.Fatalf("%s: header %s: want uint8 in C order", path, header)
	}
	m := npyShape.FindStringSubmatch(header)
	if m == nil {
		t.Fatalf("%s: no shape in %s", path, header)
	}
	n := 1
	for _, f := range strings.Split(m[1], ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		d, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: shape %s", path, m[1])
		}
		shape = append(shape, d)
		n *= d
	}
	data = b[off+hlen:]
	if len(data) != n {
		t.Fatalf("%s: %d data bytes for shape %v", path, len(data), shape)
	}
	return shape, data
}

// WriteNPY writes a NumPy format 1.0 .npy file of dtype descr ("|u1",
// "<f4") in C order: data holds the array's bytes, little-endian.
func WriteNPY(t testing.TB, path, descr string, shape []int, data []byte) {
	t.Helper()
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, tuple)
	pad := (64 - (10+len(dict)+1)%64) % 64
	dict += strings.Repeat(" ", pad) + "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(dict)), byte(len(dict)>>8))
	b = append(append(b, dict...), data...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

var npyShape = regexp.MustCompile(`'shape': \(([^)]*)\)`)

// FrameIndex is testdata/expected_frames/index.json: fixture frames and
// TensorFlow's decode and resizes of each, as .npy files.
type FrameIndex struct {
	Frames []struct {
		Dataset     string `json:"dataset"`
		Split       string `json:"split"`
		ShardFile   string `json:"shard_file"`
		RecordIndex int    `json:"record_index"`
		Step        int    `json:"step"`
		ImageKey    string `json:"image_key"`
		Format      string `json:"encoded_format"`
		Files       []struct {
			File  string `json:"file"`
			Kind  string `json:"kind"` // "decoded" or "resized"
			Size  []int  `json:"size"`
			Shape []int  `json:"shape"`
		} `json:"files"`
	} `json:"frames"`
}

// LoadFrameIndex reads dir/index.json, dir being testdata/expected_frames.
func LoadFrameIndex(t testing.TB, dir string) FrameIndex {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx FrameIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Frames) == 0 {
		t.Fatalf("%s/index.json lists no frames", dir)
	}
	return idx
}
