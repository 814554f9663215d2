package mp4

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
)

// fuzzSeeds are the real files, hand-made ones that reach every box this
// package reads, and a few broken ones.
func fuzzSeeds(f *testing.F) [][]byte {
	names, err := filepath.Glob("testdata/*.mp4")
	if err != nil {
		f.Fatal(err)
	}
	var seeds [][]byte
	for _, name := range names {
		seeds = append(seeds, readFile(f, filepath.Base(name)))
	}
	rich := newMovie()
	rich.tracks[0].tkhd = bx("tkhd", full(1, 0), u64(0, 0), u32(7, 0), u64(2048))
	rich.tracks[0].edts = bx("edts", bx("elst", full(1, 0), u32(2), u64(100, ^uint64(0)), u32(1<<16), u64(133, 512), u32(1<<16)))
	rich.tracks[0].ctts = bx("ctts", full(1, 0), u32(3), u32(1, 1024, 1, 0xfffffe00, 2, 0))
	rich.tracks[0].stss = bx("stss", full(0, 0), u32(2), u32(1, 3))
	rich.tracks[0].stsc = bx("stsc", full(0, 0), u32(2), u32(1, 1, 1, 2, 3, 1))
	rich.tracks[0].co = func(off uint64) []byte { return bx("co64", full(0, 0), u32(2), u64(off, off+10)) }
	big := newMovie()
	big.big, big.moovFirst = true, true
	seeds = append(seeds, newMovie().bytes(), rich.bytes(), big.bytes(),
		nil,
		[]byte("hello, world"),
		cat(u32(1), []byte("ftyp"), u64(^uint64(0))),
		cat(bx("ftyp"), cat(u32(0), []byte("moov"), bx("mvhd", zeros(20)))),
	)
	return seeds
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := parseBytes(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			if errors.Is(err, ErrUnsupported) == errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v matches both or neither of ErrUnsupported and ErrMalformed", err)
			}
			return
		}
		total := 0
		for _, tr := range file.Tracks {
			if known, ok := codecs[tr.FourCC]; ok != (tr.Codec != "") || known.codec != tr.Codec {
				t.Fatalf("FourCC %q has Codec %q", tr.FourCC, tr.Codec)
			}
			if tr.Timescale == 0 {
				t.Fatal("timescale 0")
			}
			total += len(tr.Samples)
			for i, s := range tr.Samples {
				if s.Offset < 0 || s.Offset+int64(s.Size) > int64(len(data)) {
					t.Fatalf("sample %d = %+v lies outside the %d-byte file", i, s, len(data))
				}
				if s.DTS > s.PTS {
					t.Fatalf("sample %d = %+v decodes after it is shown", i, s)
				}
			}
		}
		if total > MaxSamples {
			t.Fatalf("%d samples", total)
		}
	})
}

// FuzzParsePartial: ParsePartial never panics, agrees with Parse on every
// file Parse reads, and otherwise either fails as Parse does or says the
// file is truncated, with samples placed at sane offsets.
func FuzzParsePartial(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		whole, werr := parseBytes(data)
		part, err := ParsePartial(bytes.NewReader(data), int64(len(data)))
		if werr == nil {
			if err != nil || part.Truncated != nil || !reflect.DeepEqual(part, whole) {
				t.Fatalf("ParsePartial = %+v, %v on a file Parse reads", part, err)
			}
			return
		}
		if err != nil {
			if err.Error() != werr.Error() {
				t.Fatalf("ParsePartial error %v, Parse %v", err, werr)
			}
			return
		}
		if !errors.Is(part.Truncated, ErrTruncated) || part.Truncated.Error() != werr.Error() {
			t.Fatalf("ParsePartial: truncated %v, Parse %v", part.Truncated, werr)
		}
		for _, tr := range part.Tracks {
			for i, s := range tr.Samples {
				if s.Offset < 0 || s.Offset+int64(s.Size) < s.Offset {
					t.Fatalf("sample %d = %+v", i, s)
				}
			}
		}
	})
}
