package pairs

import (
	"github.com/oxefs/oxefs/storage/local"

	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/cache"
)

// The fixtures, written by tensorflow_datasets itself (testdata/generate.py).
const fixtureDir = "../testdata"

func newStore(t testing.TB) *cache.Store {
	t.Helper()
	s, err := cache.NewStore(cache.Options{
		CacheDir:   t.TempDir(),
		DiskBudget: 1 << 30,
		RAMBudget:  64 << 20,
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// openDir opens a TFDS dataset directory; name "" keeps the dataset's own.
func openDir(t testing.TB, s *cache.Store, name, dir string) *cache.Dataset {
	t.Helper()
	ds, err := s.Open(context.Background(), name, local.New(dir))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func openFixture(t testing.TB, s *cache.Store, dataset string) *cache.Dataset {
	return openDir(t, s, "", filepath.Join(fixtureDir, "datasets", dataset, "1.0.0"))
}

func episode(t testing.TB, ds *cache.Dataset, ref cache.Ref) *cache.Episode {
	t.Helper()
	ep, err := ds.Episode(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

var shardNumber = regexp.MustCompile(`-(\d+)-of-\d+$`)

// shardIndex reads the shard number out of a TFDS shard file name.
func shardIndex(t testing.TB, file string) int {
	t.Helper()
	m := shardNumber.FindStringSubmatch(file)
	if m == nil {
		t.Fatalf("shard file name %q", file)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// readNPY reads a NumPy .npy file of dtype |u1 in C order.
func readNPY(t testing.TB, path string) (shape []int, data []byte) {
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
	m := regexp.MustCompile(`'shape': \(([^)]*)\)`).FindStringSubmatch(header)
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

type frameIndex struct {
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
			Kind  string `json:"kind"`
			Size  []int  `json:"size"`
			Shape []int  `json:"shape"`
		} `json:"files"`
	} `json:"frames"`
}

func loadFrameIndex(t testing.TB) frameIndex {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, "expected_frames", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx frameIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Frames) == 0 {
		t.Fatal("expected_frames/index.json lists no frames")
	}
	return idx
}

// diffStats compares two equally long pixel arrays.
type diffStats struct {
	mean  float64
	max   int
	count int // values that differ
}

func diff(a, b []byte) diffStats {
	var s diffStats
	var sum int
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		sum += d
		s.max = max(s.max, d)
		if d != 0 {
			s.count++
		}
	}
	s.mean = float64(sum) / float64(len(a))
	return s
}

func (s diffStats) String() string {
	return fmt.Sprintf("mean |diff| %.4f, max %d, %d values differ", s.mean, s.max, s.count)
}

// testDecoder returns a decoder closed at the end of the test. When
// libjpeg-turbo is asked for and cannot be had, the test is skipped with a
// message saying so.
func testDecoder(t testing.TB, choice string) *Decoder {
	t.Helper()
	d, err := NewDecoder(DecoderOptions{JPEG: choice})
	if err != nil {
		t.Skipf("SKIPPING the libjpeg-turbo half of this test: %v. It needs a cgo build and libturbojpeg.so.0 (Debian/Ubuntu: apt-get install libturbojpeg0).", err)
	}
	t.Cleanup(d.Close)
	return d
}

// single returns a one-frame BFHWC destination of h×w.
func single(h, w int) frameDst {
	return newFrameDst(make([]byte, h*w*3), BFHWC, 0, 1, h, w)
}
