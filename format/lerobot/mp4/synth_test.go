package mp4

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
)

// Box builders for hand-made files.

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func bx(typ string, parts ...[]byte) []byte {
	body := cat(parts...)
	return cat(u32(uint32(8+len(body))), []byte(typ), body)
}

// bx64 writes a box with a 64-bit size.
func bx64(typ string, parts ...[]byte) []byte {
	body := cat(parts...)
	return cat(u32(1), []byte(typ), u64(uint64(16+len(body))), body)
}

func full(version uint8, flags uint32) []byte { return u32(uint32(version)<<24 | flags) }

func u16(vs ...uint16) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint16(b, v)
	}
	return b
}

func u32(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

func u64(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

func zeros(n int) []byte { return make([]byte, n) }

// synthTrack holds the boxes of one track; nil boxes are left out.
type synthTrack struct {
	tkhd, edts, mdhd, hdlr, stsd, stts, ctts, stss, stsz, stsc []byte
	// co returns the chunk offset box, given where the samples start.
	co    func(dataOff uint64) []byte
	extra [][]byte // more stbl children
	minf  []byte   // replaces minf when set
}

// movie is a hand-made file: ftyp, mdat holding sizes' bytes, moov.
type movie struct {
	sizes     []uint32
	mvhd      []byte
	tracks    []*synthTrack
	extraMoov [][]byte
	moovFirst bool // moov before mdat, mdat with size 0
	big       bool // 64-bit sizes for moov and mdat
	trailer   []byte
}

// visualEntry is a sample entry of the given type with the given children.
func visualEntry(typ string, kids ...[]byte) []byte {
	return bx(typ, zeros(6), u16(1), zeros(16), u16(64, 48), zeros(50), cat(kids...))
}

func defaultTrack(id uint32) *synthTrack {
	return &synthTrack{
		tkhd: bx("tkhd", full(0, 3), u32(0, 0, id, 0, 2048), zeros(60)),
		mdhd: bx("mdhd", full(0, 0), u32(0, 0, 15360, 2048), u16(0x55c4, 0)),
		hdlr: bx("hdlr", full(0, 0), u32(0), []byte("vide"), zeros(12), []byte("VideoHandler\x00")),
		stsd: bx("stsd", full(0, 0), u32(1), visualEntry("avc1", bx("avcC", []byte{1, 2, 3}), bx("btrt", zeros(12)))),
		stts: bx("stts", full(0, 0), u32(1), u32(4, 512)),
		stsz: bx("stsz", full(0, 0), u32(0, 4), u32(10, 20, 30, 40)),
		stsc: bx("stsc", full(0, 0), u32(1), u32(1, 4, 1)),
		co: func(dataOff uint64) []byte {
			return bx("stco", full(0, 0), u32(1, uint32(dataOff)))
		},
	}
}

func newMovie() *movie {
	return &movie{
		sizes:  []uint32{10, 20, 30, 40},
		mvhd:   bx("mvhd", full(0, 0), u32(0, 0, 1000, 133), zeros(80)),
		tracks: []*synthTrack{defaultTrack(1)},
	}
}

func (t *synthTrack) box(dataOff uint64) []byte {
	stbl := bx("stbl", cat(t.stsd, t.stts, t.ctts, t.stss, t.stsz, t.stsc, t.co(dataOff)), cat(t.extra...))
	minf := t.minf
	if minf == nil {
		minf = bx("minf", bx("vmhd", full(0, 1), zeros(8)), stbl)
	}
	return bx("trak", t.tkhd, t.edts, bx("mdia", t.mdhd, t.hdlr, minf))
}

func (m *movie) moov(dataOff uint64) []byte {
	var traks [][]byte
	for _, t := range m.tracks {
		traks = append(traks, t.box(dataOff))
	}
	body := cat(m.mvhd, cat(traks...), cat(m.extraMoov...))
	if m.big {
		return bx64("moov", body)
	}
	return bx("moov", body)
}

func (m *movie) bytes() []byte {
	ftyp := bx("ftyp", []byte("isom"), u32(512), []byte("isomavc1"))
	var data []byte
	for i, n := range m.sizes {
		data = append(data, bytes.Repeat([]byte{byte(i + 1)}, int(n))...)
	}
	mdatHdr := 8
	if m.big {
		mdatHdr = 16
	}
	if m.moovFirst {
		moovLen := len(m.moov(0))
		dataOff := uint64(len(ftyp) + moovLen + mdatHdr)
		mdat := cat(u32(0), []byte("mdat"), data)
		if m.big {
			mdat = bx64("mdat", data)
		}
		return cat(ftyp, m.moov(dataOff), mdat, m.trailer)
	}
	mdat := bx("mdat", data)
	if m.big {
		mdat = bx64("mdat", data)
	}
	return cat(ftyp, mdat, m.moov(uint64(len(ftyp)+mdatHdr)), m.trailer)
}

func parseBytes(b []byte) (*File, error) { return Parse(bytes.NewReader(b), int64(len(b))) }

func TestSynthetic(t *testing.T) {
	const dataOff = 24 + 8 // ftyp, mdat header
	defaultSamples := []Sample{
		{Offset: dataOff, Size: 10, DTS: 0, PTS: 0, Key: true},
		{Offset: dataOff + 10, Size: 20, DTS: 512, PTS: 512, Key: true},
		{Offset: dataOff + 30, Size: 30, DTS: 1024, PTS: 1024, Key: true},
		{Offset: dataOff + 60, Size: 40, DTS: 1536, PTS: 1536, Key: true},
	}
	withKeys := func(keys ...bool) []Sample {
		s := slices.Clone(defaultSamples)
		for i := range s {
			s[i].Key = keys[i]
		}
		return s
	}
	tests := []struct {
		name    string
		edit    func(m *movie)
		samples []Sample // of the first track
		check   func(t *testing.T, f *File)
	}{
		{name: "defaults", edit: func(m *movie) {}, samples: defaultSamples, check: func(t *testing.T, f *File) {
			tr := f.Tracks[0]
			if tr.ID != 1 || tr.FourCC != "avc1" || tr.Codec != "h264" || !bytes.Equal(tr.Config, []byte{1, 2, 3}) ||
				tr.Width != 64 || tr.Height != 48 || tr.Timescale != 15360 {
				t.Errorf("track = %+v", tr)
			}
		}},
		{name: "64-bit box sizes", edit: func(m *movie) { m.big = true }, check: func(t *testing.T, f *File) {
			if s := f.Tracks[0].Samples; len(s) != 4 || s[0].Offset != dataOff+8 || s[3].Offset != dataOff+8+60 {
				t.Errorf("samples %+v do not start after the 16-byte mdat header", s)
			}
		}},
		{name: "moov first, mdat to the end", edit: func(m *movie) { m.moovFirst = true }, check: func(t *testing.T, f *File) {
			if s := f.Tracks[0].Samples; len(s) != 4 || s[3].Offset+int64(s[3].Size) != int64(len(newMovie().moovFirstBytes())) {
				t.Errorf("samples %+v do not end at the end of the file", s)
			}
		}},
		{name: "moov first, 64-bit mdat", edit: func(m *movie) { m.moovFirst, m.big = true, true }},
		{name: "co64, two chunks, two stsc entries", edit: func(m *movie) {
			tr := m.tracks[0]
			tr.stsc = bx("stsc", full(0, 0), u32(2), u32(1, 1, 1, 2, 3, 1))
			tr.co = func(off uint64) []byte { return bx("co64", full(0, 0), u32(2), u64(off, off+10)) }
		}, samples: defaultSamples},
		{name: "stss", edit: func(m *movie) {
			m.tracks[0].stss = bx("stss", full(0, 0), u32(2), u32(1, 3))
		}, samples: withKeys(true, false, true, false)},
		{name: "empty stss", edit: func(m *movie) {
			m.tracks[0].stss = bx("stss", full(0, 0), u32(0))
		}, samples: withKeys(false, false, false, false)},
		{name: "version 1 boxes, empty edit, negative ctts", edit: func(m *movie) {
			tr := m.tracks[0]
			tr.tkhd = bx("tkhd", full(1, 3), u64(0, 0), u32(7, 0), u64(2048), zeros(60))
			tr.mdhd = bx("mdhd", full(1, 0), u64(0, 0), u32(15360), u64(2048), u16(0x55c4, 0))
			// 100 ms empty, then the media from 512.
			tr.edts = bx("edts", bx("elst", full(1, 0), u32(2), u64(100, ^uint64(0)), u32(1<<16), u64(133, 512), u32(1<<16)))
			tr.ctts = bx("ctts", full(1, 0), u32(3), u32(1, 1024, 1, uint32(0xfffffe00), 2, 0))
		}, samples: []Sample{
			// PTS = DTS + ctts + 1536 - 512; DTS = DTS + 1536 - 512 - 512.
			{Offset: dataOff, Size: 10, DTS: 512, PTS: 2048, Key: true},
			{Offset: dataOff + 10, Size: 20, DTS: 1024, PTS: 1024, Key: true},
			{Offset: dataOff + 30, Size: 30, DTS: 1536, PTS: 2048, Key: true},
			{Offset: dataOff + 60, Size: 40, DTS: 2048, PTS: 2560, Key: true},
		}, check: func(t *testing.T, f *File) {
			if f.Tracks[0].ID != 7 {
				t.Errorf("ID = %d, want 7", f.Tracks[0].ID)
			}
		}},
		{name: "edit list after the media is ignored", edit: func(m *movie) {
			m.tracks[0].edts = bx("edts", bx("elst", full(0, 0), u32(2), u32(133, 0, 1<<16, 10, 0xffffffff, 1<<16)))
		}, samples: defaultSamples},
		{name: "other tracks are skipped", edit: func(m *movie) {
			soun := defaultTrack(2)
			soun.hdlr = bx("hdlr", full(0, 0), u32(0), []byte("soun"), zeros(12), []byte("SoundHandler\x00"))
			soun.minf = bx("minf", bx("smhd", zeros(8)))
			m.tracks = append([]*synthTrack{soun}, m.tracks[0], defaultTrack(3))
		}, samples: defaultSamples, check: func(t *testing.T, f *File) {
			if !slices.Equal(f.Skipped, []string{"soun"}) || len(f.Tracks) != 2 || f.Tracks[1].ID != 3 {
				t.Errorf("Skipped = %v, %d tracks", f.Skipped, len(f.Tracks))
			}
		}},
		{name: "hvc1 without hvcC", edit: func(m *movie) {
			m.tracks[0].stsd = bx("stsd", full(0, 0), u32(1), visualEntry("hvc1"))
		}, check: func(t *testing.T, f *File) {
			if tr := f.Tracks[0]; tr.Codec != "hevc" || tr.Config != nil {
				t.Errorf("Codec, Config = %q, %v; want hevc, nil", tr.Codec, tr.Config)
			}
		}},
		{name: "empty track", edit: func(m *movie) {
			tr := m.tracks[0]
			tr.stts = bx("stts", full(0, 0), u32(0))
			tr.stsz = bx("stsz", full(0, 0), u32(0, 0))
			tr.stsc = bx("stsc", full(0, 0), u32(0))
			tr.co = func(uint64) []byte { return bx("stco", full(0, 0), u32(0)) }
		}, samples: []Sample{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMovie()
			tc.edit(m)
			f, err := parseBytes(m.bytes())
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(f.Tracks) == 0 {
				t.Fatal("no video track")
			}
			if tc.samples != nil && !slices.Equal(f.Tracks[0].Samples, tc.samples) {
				t.Errorf("samples\n%+v\nwant\n%+v", f.Tracks[0].Samples, tc.samples)
			}
			if tc.check != nil {
				tc.check(t, f)
			}
		})
	}
}

func (m *movie) moovFirstBytes() []byte {
	m.moovFirst = true
	return m.bytes()
}

// trk returns a file edit that changes only the first track.
func trk(edit func(tr *synthTrack)) func(m *movie) []byte {
	return func(m *movie) []byte {
		edit(m.tracks[0])
		return nil
	}
}

func TestSyntheticErrors(t *testing.T) {
	stbl := "moov/trak[0]/mdia/minf/stbl"
	tests := []struct {
		name string
		edit func(m *movie) []byte // returns the file, or nil for m.bytes()
		want error
		msg  string
	}{
		{"mvex", func(m *movie) []byte { m.extraMoov = [][]byte{bx("mvex", bx("trex", zeros(24)))}; return nil },
			ErrUnsupported, "moov/mvex: fragmented MP4 is not supported"},
		{"moof", func(m *movie) []byte { m.trailer = bx("moof", bx("mfhd", zeros(8))); return nil },
			ErrUnsupported, "moof: fragmented MP4 is not supported"},
		{"stz2", trk(func(tr *synthTrack) { tr.extra = [][]byte{bx("stz2", zeros(12))} }),
			ErrUnsupported, stbl + "/stz2: compact sample sizes"},
		{"two edits", trk(func(tr *synthTrack) {
			tr.edts = bx("edts", bx("elst", full(0, 0), u32(2), u32(60, 0, 1<<16, 60, 512, 1<<16)))
		}), ErrUnsupported, "moov/trak[0]/edts/elst: more than one non-empty edit"},
		{"edit rate", trk(func(tr *synthTrack) {
			tr.edts = bx("edts", bx("elst", full(0, 0), u32(1), u32(60, 0, 2<<16)))
		}), ErrUnsupported, "media rate 0x20000"},
		{"two sample entries", trk(func(tr *synthTrack) {
			tr.stsd = bx("stsd", full(0, 0), u32(2), visualEntry("avc1"), visualEntry("avc1"))
		}), ErrUnsupported, "2 sample entries"},
		{"too many samples", trk(func(tr *synthTrack) {
			tr.stsz = bx("stsz", full(0, 0), u32(0, MaxSamples+1))
		}), ErrUnsupported, "16777217 samples"},
		{"moov too big", func(m *movie) []byte { return cat(u32(MaxMoovSize+1), []byte("moov")) },
			ErrUnsupported, "moov: box is 268435457 bytes"},

		{"no mvhd", func(m *movie) []byte { m.mvhd = nil; return nil }, ErrMalformed, "moov: no mvhd box"},
		{"size 0 inside moov", func(m *movie) []byte { m.extraMoov = [][]byte{cat(u32(0), []byte("udta"))}; return nil },
			ErrMalformed, "moov/udta: size 0 (to the end of the file) is only allowed at the top level"},
		{"child past parent", trk(func(tr *synthTrack) { tr.extra = [][]byte{cat(u32(100), []byte("sdtp"))} }),
			ErrMalformed, stbl + "/sdtp: size 100 is more than the 8 bytes left"},
		{"stts short", trk(func(tr *synthTrack) { tr.stts = bx("stts", full(0, 0), u32(1), u32(3, 512)) }),
			ErrMalformed, stbl + "/stts: entries cover 3 samples, but stsz has 4"},
		{"stts long", trk(func(tr *synthTrack) {
			tr.stts = bx("stts", full(0, 0), u32(2), u32(4, 512, 1, 1))
		}),
			ErrMalformed, stbl + "/stts: entries cover more than the 4 samples"},
		{"stts entries do not fit", trk(func(tr *synthTrack) { tr.stts = bx("stts", full(0, 0), u32(1<<30), u32(4, 512)) }),
			ErrMalformed, "1073741824 entries of 8 bytes do not fit in the 8 bytes left"},
		{"ctts short", trk(func(tr *synthTrack) { tr.ctts = bx("ctts", full(0, 0), u32(1), u32(2, 512)) }),
			ErrMalformed, stbl + "/ctts: entries cover 2 samples"},
		{"ctts version 2", trk(func(tr *synthTrack) { tr.ctts = bx("ctts", full(2, 0), u32(1), u32(4, 512)) }),
			ErrMalformed, "ctts: unknown version 2"},
		{"stsc maps too few", trk(func(tr *synthTrack) { tr.stsc = bx("stsc", full(0, 0), u32(1), u32(1, 3, 1)) }),
			ErrMalformed, stbl + "/stsc: maps 3 samples, but stsz has 4"},
		{"stsc maps too many", trk(func(tr *synthTrack) { tr.stsc = bx("stsc", full(0, 0), u32(1), u32(1, 5, 1)) }),
			ErrMalformed, stbl + "/stsc: maps more than the 4 samples"},
		{"stsc starts at chunk 2", trk(func(tr *synthTrack) { tr.stsc = bx("stsc", full(0, 0), u32(1), u32(2, 4, 1)) }),
			ErrMalformed, "entry 0: first chunk is 2, not 1"},
		{"stsc chunk past stco", trk(func(tr *synthTrack) {
			tr.stsc = bx("stsc", full(0, 0), u32(2), u32(1, 2, 1, 2, 2, 1))
		}), ErrMalformed, "entry 1: first chunk 2 is not in (1, 1]"},
		{"stsc entry far past stco", trk(func(tr *synthTrack) { // found by FuzzParse: indexed past stco
			tr.stsc = bx("stsc", full(0, 0), u32(2), u32(1, 1, 1, 3, 1, 1))
		}), ErrMalformed, "entry 1: first chunk 3 is not in (1, 1]"},
		{"stsc without chunks", trk(func(tr *synthTrack) {
			tr.co = func(uint64) []byte { return bx("stco", full(0, 0), u32(0)) }
		}), ErrMalformed, "entry 0: first chunk 1, but stco has 0 chunks"},
		{"stsc chunks out of order", trk(func(tr *synthTrack) {
			tr.stsc = bx("stsc", full(0, 0), u32(2), u32(1, 2, 1, 1, 2, 1))
		}), ErrMalformed, "entry 1: first chunk 1 is not in (1, 1]"},
		{"stsc empty chunks", trk(func(tr *synthTrack) { tr.stsc = bx("stsc", full(0, 0), u32(1), u32(1, 0, 1)) }),
			ErrMalformed, "0 samples per chunk"},
		{"stsc description 2", trk(func(tr *synthTrack) { tr.stsc = bx("stsc", full(0, 0), u32(1), u32(1, 4, 2)) }),
			ErrMalformed, "sample description 2, but stsd has 1"},
		{"stss past the end", trk(func(tr *synthTrack) { tr.stss = bx("stss", full(0, 0), u32(1), u32(5)) }),
			ErrMalformed, "stss: entry 0: sample 5 is not in (0, 4]"},
		{"stss out of order", trk(func(tr *synthTrack) { tr.stss = bx("stss", full(0, 0), u32(2), u32(3, 1)) }),
			ErrMalformed, "stss: entry 1: sample 1 is not in (3, 4]"},
		{"stsz table does not fit", trk(func(tr *synthTrack) {
			tr.stsz = bx("stsz", full(0, 0), u32(0, 5), u32(1, 2, 3, 4))
		}),
			ErrMalformed, "5 sample sizes do not fit in the 16 bytes left"},
		{"both stco and co64", trk(func(tr *synthTrack) { tr.extra = [][]byte{bx("co64", full(0, 0), u32(0))} }),
			ErrMalformed, stbl + ": both stco and co64"},
		{"no chunk offsets", trk(func(tr *synthTrack) { tr.co = func(uint64) []byte { return nil } }),
			ErrMalformed, stbl + ": no stco or co64 box"},
		{"no stsd", trk(func(tr *synthTrack) { tr.stsd = nil }), ErrMalformed, stbl + ": no stsd box"},
		{"no stsz", trk(func(tr *synthTrack) { tr.stsz = nil }), ErrMalformed, stbl + ": no stsz box"},
		{"two stts", trk(func(tr *synthTrack) { tr.extra = [][]byte{tr.stts} }), ErrMalformed, stbl + "/stts: repeated"},
		{"no tkhd", trk(func(tr *synthTrack) { tr.tkhd = nil }), ErrMalformed, "moov/trak[0]: no tkhd box"},
		{"mdhd timescale 0", trk(func(tr *synthTrack) {
			tr.mdhd = bx("mdhd", full(0, 0), u32(0, 0, 0, 2048), u16(0, 0))
		}), ErrMalformed, "moov/trak[0]/mdia/mdhd: timescale is 0"},
		{"mdhd version 2", trk(func(tr *synthTrack) { tr.mdhd = bx("mdhd", full(2, 0), zeros(20)) }),
			ErrMalformed, "mdhd: unknown version 2"},
		{"hdlr short", trk(func(tr *synthTrack) { tr.hdlr = bx("hdlr", full(0, 0)) }),
			ErrMalformed, "mdia/hdlr: box is 4 bytes, too short"},
		{"edit media time -2", trk(func(tr *synthTrack) {
			tr.edts = bx("edts", bx("elst", full(0, 0), u32(1), u32(60, 0xfffffffe, 1<<16)))
		}), ErrMalformed, "entry 0: media time -2 is out of range"},
		{"huge empty edit", trk(func(tr *synthTrack) {
			tr.edts = bx("edts", bx("elst", full(1, 0), u32(1), u64(1<<63, ^uint64(0)), u32(1<<16)))
		}), ErrMalformed, "empty edit of 9223372036854775808 is out of range"},
		{"two avcC", trk(func(tr *synthTrack) {
			tr.stsd = bx("stsd", full(0, 0), u32(1), visualEntry("avc1", bx("avcC", zeros(1)), bx("avcC", zeros(1))))
		}), ErrMalformed, "stsd/avc1/avcC: repeated"},
		{"short sample entry", trk(func(tr *synthTrack) {
			tr.stsd = bx("stsd", full(0, 0), u32(1), bx("avc1", zeros(40)))
		}), ErrMalformed, "stsd/avc1: sample entry is 40 bytes, too short"},
		{"no sample entry", trk(func(tr *synthTrack) { tr.stsd = bx("stsd", full(0, 0), u32(0)) }),
			ErrMalformed, "stsd: no sample entry"},
		{"second moov", func(m *movie) []byte { b := m.bytes(); return cat(b, m.moov(32)) }, ErrMalformed, "second moov box"},
		{"not an MP4", func(m *movie) []byte { return cat(bx("abcd", zeros(8)), m.bytes()) }, ErrMalformed, `box type "abcd" at offset 0: not an MP4 file`},
		{"too many top-level boxes", func(m *movie) []byte { return bytes.Repeat(bx("free"), maxTopBoxes+1) },
			ErrMalformed, "more than 4096 top-level boxes"},
		{"top-level box smaller than its header", func(m *movie) []byte { return cat(m.bytes(), u32(4), []byte("free")) },
			ErrMalformed, "free: box at offset"},

		{"sample past the end", func(m *movie) []byte {
			m.moovFirst = true
			m.tracks[0].co = func(off uint64) []byte { return bx("stco", full(0, 0), u32(1, uint32(off+10))) }
			return nil
		}, ErrTruncated, stbl + ": sample 3 at offset "},
		{"sample at 1<<63", trk(func(tr *synthTrack) {
			tr.co = func(uint64) []byte { return bx("co64", full(0, 0), u32(1), u64(1<<63)) }
		}), ErrTruncated, "sample 0 at offset 9223372036854775808"},
		{"constant size past the end", trk(func(tr *synthTrack) {
			tr.stsz = bx("stsz", full(0, 0), u32(1000, 1<<20))
		}), ErrTruncated, "1048576 samples of 1000 bytes do not fit in the file's"},
		{"box after moov cut", func(m *movie) []byte { m.trailer = bx("free", zeros(100))[:50]; return nil },
			ErrTruncated, "free: box at offset"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMovie()
			b := tc.edit(m)
			if b == nil {
				b = m.bytes()
			}
			f, err := parseBytes(b)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Parse = %+v, %v; want %v", f, err, tc.want)
			}
			if errors.Is(err, ErrUnsupported) == errors.Is(err, ErrMalformed) {
				t.Errorf("error %v matches both or neither of ErrUnsupported and ErrMalformed", err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %v is not an *Error", err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q\ndoes not say %q", err, tc.msg)
			}
		})
	}
}

func TestRescale(t *testing.T) {
	tests := []struct {
		d        uint64
		to, from uint32
		want     int64
		ok       bool
	}{
		{166, 15360, 1000, 2550, true}, // 2549.76, as FFmpeg writes and reads av1_delayed.mp4
		{1, 1, 2, 1, true},             // halves round up
		{1, 1, 3, 0, true},
		{0, 15360, 1000, 0, true},
		{1 << 62, 1, 1, 1 << 62, true},
		{1 << 63, 1, 1, 0, false},
		{^uint64(0), ^uint32(0), 1, 0, false},
	}
	for _, tc := range tests {
		got, ok := rescale(tc.d, tc.to, tc.from)
		if got != tc.want || ok != tc.ok {
			t.Errorf("rescale(%d, %d, %d) = %d, %v; want %d, %v", tc.d, tc.to, tc.from, got, ok, tc.want, tc.ok)
		}
	}
}
