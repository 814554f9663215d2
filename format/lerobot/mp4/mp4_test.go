package mp4

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// sidecar is what testdata/gen.py recorded from PyAV's demuxer.
type sidecar struct {
	Codec     string   `json:"codec"` // FFmpeg's decoder name
	CodecTag  string   `json:"codec_tag"`
	Width     int      `json:"width"`
	Height    int      `json:"height"`
	TimeBase  [2]int64 `json:"time_base"`
	Extradata string   `json:"extradata"`
	Packets   []struct {
		PTS  int64  `json:"pts"`
		DTS  int64  `json:"dts"`
		Size uint32 `json:"size"`
		Key  bool   `json:"key"`
		Pos  int64  `json:"pos"`
	} `json:"packets"`
}

// wantCodec maps FFmpeg's decoder names to ours.
var wantCodec = map[string]string{
	"libdav1d": "av1", "av1": "av1", "libaom-av1": "av1",
	"h264": "h264",
	"hevc": "hevc",
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordingReader records the ranges read through it.
type recordingReader struct {
	r     *bytes.Reader
	mu    sync.Mutex
	reads [][2]int64
}

func (rr *recordingReader) ReadAt(p []byte, off int64) (int, error) {
	rr.mu.Lock()
	rr.reads = append(rr.reads, [2]int64{off, off + int64(len(p))})
	rr.mu.Unlock()
	return rr.r.ReadAt(p, off)
}

// mdatBody returns the byte range of the body of the file's mdat box.
func mdatBody(t *testing.T, b []byte) (start, end int64) {
	t.Helper()
	for off := int64(0); off+8 <= int64(len(b)); {
		size := int64(binary.BigEndian.Uint32(b[off:]))
		if string(b[off+4:off+8]) == "mdat" {
			return off + 8, off + size
		}
		off += size
	}
	t.Fatal("no mdat")
	return 0, 0
}

func TestParseMatchesPyAV(t *testing.T) {
	names, err := filepath.Glob("testdata/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 6 {
		t.Fatalf("found %d sidecars in testdata, want at least 6 (run testdata/gen.py)", len(names))
	}
	for _, name := range names {
		base := strings.TrimSuffix(filepath.Base(name), ".json")
		t.Run(base, func(t *testing.T) {
			var want sidecar
			if err := json.Unmarshal(readFile(t, base+".json"), &want); err != nil {
				t.Fatal(err)
			}
			data := readFile(t, base+".mp4")
			rr := &recordingReader{r: bytes.NewReader(data)}
			f, err := Parse(rr, int64(len(data)))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}

			// A few small reads, none of them in mdat's body.
			if len(rr.reads) > 6 {
				t.Errorf("Parse made %d reads, want at most 6: %v", len(rr.reads), rr.reads)
			}
			ms, me := mdatBody(t, data)
			for _, r := range rr.reads {
				if r[0] < me && r[1] > ms {
					t.Errorf("Parse read [%d, %d), inside mdat's body [%d, %d)", r[0], r[1], ms, me)
				}
			}

			if len(f.Tracks) != 1 || len(f.Skipped) != 0 {
				t.Fatalf("got %d video tracks and skipped %v, want 1 and none", len(f.Tracks), f.Skipped)
			}
			tr := f.Tracks[0]
			if tr.FourCC != want.CodecTag || tr.Codec != wantCodec[want.Codec] {
				t.Errorf("FourCC, Codec = %q, %q; want %q, %q", tr.FourCC, tr.Codec, want.CodecTag, wantCodec[want.Codec])
			}
			if tr.Width != want.Width || tr.Height != want.Height {
				t.Errorf("size %dx%d, want %dx%d", tr.Width, tr.Height, want.Width, want.Height)
			}
			if got := hex.EncodeToString(tr.Config); got != want.Extradata {
				t.Errorf("Config = %s\nwant extradata %s", got, want.Extradata)
			}
			if tr.ID != 1 {
				t.Errorf("ID = %d, want 1", tr.ID)
			}
			// PyAV's time base is 1/timescale for these files; anything
			// else would need converting, and must convert exactly.
			num, den := want.TimeBase[0], want.TimeBase[1]
			if num <= 0 || den <= 0 || (int64(tr.Timescale)*num)%den != 0 {
				t.Fatalf("time base %d/%d is not a whole number of 1/%d ticks", num, den, tr.Timescale)
			}
			ticks := int64(tr.Timescale) * num / den // our units per PyAV unit
			if len(tr.Samples) != len(want.Packets) {
				t.Fatalf("%d samples, want %d packets", len(tr.Samples), len(want.Packets))
			}
			keys := 0
			for i, s := range tr.Samples {
				p := want.Packets[i]
				w := Sample{Offset: p.Pos, Size: p.Size, DTS: p.DTS * ticks, PTS: p.PTS * ticks, Key: p.Key}
				if s != w {
					t.Errorf("sample %d = %+v\nwant       %+v", i, s, w)
				}
				if s.Key {
					keys++
				}
			}
			if keys == 0 || keys == len(tr.Samples) {
				t.Errorf("%d of %d samples are key frames; the files have both kinds", keys, len(tr.Samples))
			}
		})
	}
}

// TestPresentationStartsAtZero checks the edit list handling on its own
// terms: ffmpeg's files whose first frame has PTS 0 (all but the delayed
// one) start at PTS 0 here too, with B-frames or without.
func TestPresentationStartsAtZero(t *testing.T) {
	for _, name := range []string{"av1.mp4", "h264_bframes.mp4", "h264_negcts.mp4", "hevc.mp4"} {
		t.Run(name, func(t *testing.T) {
			data := readFile(t, name)
			f, err := Parse(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			lo := int64(1 << 62)
			for _, s := range f.Tracks[0].Samples {
				lo = min(lo, s.PTS)
				if s.DTS > s.PTS {
					t.Errorf("DTS %d > PTS %d", s.DTS, s.PTS)
				}
			}
			if lo != 0 {
				t.Errorf("first PTS = %d, want 0", lo)
			}
		})
	}
}

func TestConcatenatedEpisodes(t *testing.T) {
	data := readFile(t, "av1_concat.mp4")
	f, err := Parse(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Tracks[0].Samples
	if len(s) != 24+16 {
		t.Fatalf("%d samples, want 40", len(s))
	}
	// The second episode starts on a key frame and carries on the clock.
	if !s[24].Key || s[24].PTS != s[23].PTS+512 {
		t.Errorf("sample 24 = %+v after %+v, want a key frame 512 ticks later", s[24], s[23])
	}
}

func TestTruncated(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		cut     func(b []byte) int // length to keep
		want    error
		message string
	}{
		{"moov last, cut in mdat", "av1.mp4", func(b []byte) int { return len(b) / 2 }, ErrTruncated, `mdat: box at offset 40`},
		{"moov first, cut in mdat", "av1_faststart.mp4", func(b []byte) int { return len(b) - 1000 }, ErrTruncated, "stbl: sample 19 at offset 6315, 49 bytes, ends past the end of the file at 6342"},
		{"moov first, cut in moov", "av1_faststart.mp4", func(b []byte) int { return 500 }, ErrTruncated, "moov: box at offset 32 has size 905, but the file ends 468 bytes into it"},
		{"moov last, cut in moov", "h264_bframes.mp4", func(b []byte) int { return len(b) - 10 }, ErrTruncated, "moov: box at offset"},
		{"cut before moov", "av1.mp4", func(b []byte) int { return bytes.Index(b, []byte("moov")) - 4 }, ErrMalformed, "no moov box"},
		{"cut in a box header", "av1.mp4", func(b []byte) int { return bytes.Index(b, []byte("moov")) }, ErrMalformed, "4 trailing bytes"},
		{"empty", "av1.mp4", func(b []byte) int { return 0 }, ErrMalformed, "no moov box in 0 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := readFile(t, tc.file)
			data = data[:tc.cut(data)]
			f, err := Parse(bytes.NewReader(data), int64(len(data)))
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse = %v, %v; want an error matching %v and ErrMalformed", f, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q does not say %q", err, tc.message)
			}
		})
	}
}

// TestParsePartial cuts files with moov first and with moov last inside
// mdat. With moov first (LeRobot's faststart files), ParsePartial returns
// every sample, placed as in the whole file, and says the file is
// truncated as Parse does: the samples before the cut are readable. With
// moov last the cut loses moov, and ParsePartial fails as Parse does. A
// whole file of either order parses as Parse parses it.
func TestParsePartial(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		moovFirst  bool
	}{
		{"moov first", "av1_faststart.mp4", true},
		{"moov last", "av1.mp4", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := readFile(t, tc.file)
			whole, err := Parse(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParsePartial(bytes.NewReader(data), int64(len(data)))
			if err != nil || got.Truncated != nil || !reflect.DeepEqual(got, whole) {
				t.Fatalf("whole file: ParsePartial = %+v, %v; want Parse's %+v", got, err, whole)
			}
			start, end := mdatBody(t, data)
			for _, cut := range []int64{start + 1, (start + end) / 2, end - 1} {
				b := data[:cut]
				_, perr := Parse(bytes.NewReader(b), cut)
				got, err := ParsePartial(bytes.NewReader(b), cut)
				if !tc.moovFirst {
					if err == nil || err.Error() != perr.Error() {
						t.Errorf("cut at %d: ParsePartial = %v, want Parse's error %v", cut, err, perr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("cut at %d: %v", cut, err)
				}
				if !errors.Is(got.Truncated, ErrTruncated) || got.Truncated.Error() != perr.Error() {
					t.Errorf("cut at %d: Truncated %v, want Parse's error %v", cut, got.Truncated, perr)
				}
				if !reflect.DeepEqual(got.Tracks, whole.Tracks) {
					t.Errorf("cut at %d: the samples differ from the whole file's", cut)
				}
				readable := 0
				for _, s := range got.Tracks[0].Samples {
					if s.Offset+int64(s.Size) <= cut {
						readable++
					}
				}
				t.Logf("cut at %d of %d: %d of %d samples readable", cut, len(data), readable, len(got.Tracks[0].Samples))
			}
		})
	}
}

// TestEveryPrefix cuts files at every length: each prefix is an error
// about the file, never a success, a panic or ErrUnsupported.
func TestEveryPrefix(t *testing.T) {
	for _, name := range []string{"av1.mp4", "av1_faststart.mp4", "h264_bframes.mp4"} {
		data := readFile(t, name)
		for n := range len(data) {
			_, err := Parse(bytes.NewReader(data[:n]), int64(n))
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s cut to %d bytes: Parse error %v, want ErrMalformed", name, n, err)
			}
		}
	}
}

// TestSizeLargerThanReader tells Parse the file is longer than the reader
// finds: the short read is truncation too.
func TestSizeLargerThanReader(t *testing.T) {
	data := readFile(t, "av1_faststart.mp4")
	_, err := Parse(bytes.NewReader(data[:500]), int64(len(data)))
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("Parse = %v, want ErrTruncated", err)
	}
}

func TestNotMP4(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"text", []byte("hello, world: this is not a video file at all")},
		{"zeros", make([]byte, 64)},
		{"binary", []byte{0x00, 0x00, 0x00, 0x10, 0xff, 0xfe, 0x01, 0x02, 1, 2, 3, 4, 5, 6, 7, 8}},
		{"png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(bytes.NewReader(tc.data), int64(len(tc.data)))
			if !errors.Is(err, ErrMalformed) || errors.Is(err, ErrTruncated) {
				t.Fatalf("Parse = %v, want ErrMalformed but not ErrTruncated", err)
			}
		})
	}
}

func TestUnknownFourCC(t *testing.T) {
	data := readFile(t, "av1.mp4")
	stsd := bytes.Index(data, []byte("stsd"))
	entry := stsd + 4 + 8 + 4 // version and flags, entry count, entry size
	if string(data[entry:entry+4]) != "av01" {
		t.Fatalf("no av01 entry at %d", entry)
	}
	copy(data[entry:], "xyz1")
	f, err := Parse(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	tr := f.Tracks[0]
	if tr.FourCC != "xyz1" || tr.Codec != "" || tr.Config != nil {
		t.Errorf("FourCC, Codec, Config = %q, %q, %x; want xyz1, empty, nil", tr.FourCC, tr.Codec, tr.Config)
	}
	if tr.Width != 64 || tr.Height != 48 || len(tr.Samples) != 24 {
		t.Errorf("got %dx%d with %d samples, want 64x48 with 24", tr.Width, tr.Height, len(tr.Samples))
	}
}

func TestErrorKinds(t *testing.T) {
	tests := []struct {
		err                            error
		malformed, truncated, unsuppor bool
	}{
		{malformed("a", "x"), true, false, false},
		{truncated("a", "x"), true, true, false},
		{unsupported("a", "x"), false, false, true},
	}
	for _, tc := range tests {
		if errors.Is(tc.err, ErrMalformed) != tc.malformed || errors.Is(tc.err, ErrTruncated) != tc.truncated || errors.Is(tc.err, ErrUnsupported) != tc.unsuppor {
			t.Errorf("%v matches the wrong sentinels", tc.err)
		}
	}
	if got := malformed("moov/mvhd", "timescale is %d", 0).Error(); got != "mp4: moov/mvhd: timescale is 0" {
		t.Errorf("Error() = %q", got)
	}
}

// errReader fails every read.
type errReader struct{}

var errDisk = errors.New("disk on fire")

func (errReader) ReadAt([]byte, int64) (int, error) { return 0, errDisk }

func TestReadError(t *testing.T) {
	_, err := Parse(errReader{}, 1000)
	if !errors.Is(err, errDisk) || errors.Is(err, ErrMalformed) {
		t.Fatalf("Parse = %v, want the reader's error and not ErrMalformed", err)
	}
}
