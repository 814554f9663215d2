package mp4

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestWriterRoundTrip writes tracks with and without reordering and reads
// them back with Parse: every sample's offset, size, times and sync flag.
func TestWriterRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		codec   string
		n       int
		reorder bool // B-frame style: PTS ahead of DTS, first DTS negative
	}{
		{"av1 one chunk", "av1", 12, false},
		{"av1 many chunks", "av1", 100, false},
		{"h264 exact chunks", "h264", 64, false},
		{"h264 reordered", "h264", 40, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "v.mp4")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cfg := TrackConfig{Codec: tc.codec, Config: []byte{0x81, 0, 0x0c, 0}, Width: 320, Height: 240, Timescale: 10240}
			w, err := NewWriter(f, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var want []WriteSample
			for i := range tc.n {
				s := WriteSample{Data: bytes.Repeat([]byte{byte(i)}, 100+i*7%50), DTS: int64(i) * 1024, PTS: int64(i) * 1024, Duration: 1024, Key: i%2 == 0}
				if tc.reorder {
					s.DTS -= 2048
					if i%3 == 1 {
						s.PTS += 1024
					}
				}
				if err := w.Write(s); err != nil {
					t.Fatal(err)
				}
				want = append(want, s)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			// Faststart, as LeRobot's encoder writes: the sample table
			// first, so that a cut keeps it.
			if order := topBoxes(t, b); strings.Join(order, ",") != "ftyp,moov,free,mdat" {
				t.Errorf("top-level boxes %v, want ftyp, moov, free, mdat", order)
			}
			start, end := mdatBody(t, b)
			cut := (start + end) / 2
			part, err := ParsePartial(bytes.NewReader(b[:cut]), cut)
			if err != nil || !errors.Is(part.Truncated, ErrTruncated) || !reflect.DeepEqual(part.Tracks, got.Tracks) {
				t.Errorf("cut in mdat: ParsePartial = %v, %v; want the whole table, truncated", part, err)
			}
			if len(got.Tracks) != 1 {
				t.Fatalf("%d tracks", len(got.Tracks))
			}
			tr := got.Tracks[0]
			if tr.Codec != tc.codec || tr.Width != 320 || tr.Height != 240 || tr.Timescale != 10240 || !bytes.Equal(tr.Config, cfg.Config) {
				t.Errorf("track %+v", tr)
			}
			if len(tr.Samples) != tc.n {
				t.Fatalf("%d samples, want %d", len(tr.Samples), tc.n)
			}
			for i, s := range tr.Samples {
				w := want[i]
				data := b[s.Offset : s.Offset+int64(s.Size)]
				if !bytes.Equal(data, w.Data) || s.Key != w.Key {
					t.Errorf("sample %d: %d bytes key %v, want %d key %v", i, s.Size, s.Key, len(w.Data), w.Key)
				}
				// The edit list starts presentation at 0 and keeps DTS <= PTS.
				if s.PTS != w.PTS || s.DTS != w.DTS {
					t.Errorf("sample %d: pts %d dts %d, want %d %d", i, s.PTS, s.DTS, w.PTS, w.DTS)
				}
			}
		})
	}
}

// topBoxes lists the types of the file's top-level boxes.
func topBoxes(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	for off := int64(0); off+8 <= int64(len(b)); {
		size := int64(binary.BigEndian.Uint32(b[off:]))
		if size < 8 {
			t.Fatalf("box at %d has size %d", off, size)
		}
		out = append(out, string(b[off+4:off+8]))
		off += size
	}
	return out
}

// TestWriterErrors checks what the writer refuses.
func TestWriterErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.mp4")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := NewWriter(f, TrackConfig{Codec: "vp9", Width: 2, Height: 2, Timescale: 1}); err == nil {
		t.Error("vp9 accepted")
	}
	w, err := NewWriter(f, TrackConfig{Codec: "av1", Width: 2, Height: 2, Timescale: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(WriteSample{Data: []byte{1}, DTS: 5, Duration: 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(WriteSample{Data: []byte{1}, DTS: 5, Duration: 1}); err == nil {
		t.Error("equal DTS accepted")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(WriteSample{Data: []byte{1}, DTS: 9}); err == nil || errors.Is(err, ErrMalformed) {
		t.Errorf("write after close: %v", err)
	}
}
