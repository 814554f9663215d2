package mp4

import (
	"bytes"
	"math/bits"
)

// maxTime bounds edit-list times, so that sums of times never overflow.
const maxTime = 1 << 60

// codecs maps the sample entry types this package knows to the codec name
// and the type of the box that holds the decoder configuration.
var codecs = map[string]struct{ codec, config string }{
	"av01": {"av1", "av1C"},
	"avc1": {"h264", "avcC"},
	"avc3": {"h264", "avcC"},
	"hvc1": {"hevc", "hvcC"},
	"hev1": {"hevc", "hvcC"},
}

// parseTrak parses a trak box. It returns the track's handler type, and for
// a video track ("vide") the track itself, with at most budget samples.
func parseTrak(trak box, movieScale uint32, fb bounds, budget int) (Track, string, error) {
	kids, err := children(trak.body, trak.path)
	if err != nil {
		return Track{}, "", err
	}
	tb, err := only(kids, trak.path, []string{"tkhd", "edts", "mdia"}, "tkhd", "mdia")
	if err != nil {
		return Track{}, "", err
	}
	mdia, err := children(tb["mdia"].body, tb["mdia"].path)
	if err != nil {
		return Track{}, "", err
	}
	mb, err := only(mdia, tb["mdia"].path, []string{"mdhd", "hdlr", "minf"}, "mdhd", "hdlr", "minf")
	if err != nil {
		return Track{}, "", err
	}
	handler, err := parseHdlr(mb["hdlr"])
	if err != nil || handler != "vide" {
		return Track{}, handler, err
	}

	var t Track
	if t.ID, err = parseTkhd(tb["tkhd"]); err != nil {
		return Track{}, "", err
	}
	if t.Timescale, err = parseMdhd(mb["mdhd"]); err != nil {
		return Track{}, "", err
	}
	var ed edit
	if edts := tb["edts"]; edts != nil {
		if ed, err = parseEdts(edts, movieScale, t.Timescale); err != nil {
			return Track{}, "", err
		}
	}
	stbl, sb, err := stblBoxes(mb["minf"])
	if err != nil {
		return Track{}, "", err
	}
	if err := parseStsd(sb["stsd"], &t); err != nil {
		return Track{}, "", err
	}
	if t.Samples, err = sampleTable(sb, stbl.path, ed, fb, budget); err != nil {
		return Track{}, "", err
	}
	return t, handler, nil
}

// stblBoxes returns the stbl box in minf and the children of stbl that
// this package reads, by type.
func stblBoxes(minf *box) (*box, map[string]*box, error) {
	kids, err := children(minf.body, minf.path)
	if err != nil {
		return nil, nil, err
	}
	mb, err := only(kids, minf.path, []string{"stbl"}, "stbl")
	if err != nil {
		return nil, nil, err
	}
	stbl := mb["stbl"]
	kids, err = children(stbl.body, stbl.path)
	if err != nil {
		return nil, nil, err
	}
	sb, err := only(kids, stbl.path,
		[]string{"stsd", "stts", "ctts", "stss", "stsz", "stz2", "stsc", "stco", "co64"},
		"stsd", "stts", "stsc")
	return stbl, sb, err
}

func parseHdlr(b *box) (string, error) {
	c := cursor{b: b.body}
	c.fullBox()
	c.skip(4) // pre_defined
	handler := c.take(4)
	if c.short {
		return "", malformed(b.path, "box is %d bytes, too short", len(b.body))
	}
	return string(handler), nil
}

// parseTkhd returns the track ID.
func parseTkhd(b *box) (uint32, error) { return afterTimes(b) }

// parseMdhd returns the track's timescale.
func parseMdhd(b *box) (uint32, error) { return timescale(b) }

// afterTimes reads the 32-bit field that follows a full box's creation
// and modification times (32-bit each in version 0, 64-bit in version 1):
// tkhd's track ID, mvhd's and mdhd's timescale.
func afterTimes(b *box) (uint32, error) {
	c := cursor{b: b.body}
	switch v, _ := c.fullBox(); v {
	case 0:
		c.skip(8)
	case 1:
		c.skip(16)
	default:
		return 0, malformed(b.path, "unknown version %d", v)
	}
	x := c.u32()
	if c.short {
		return 0, malformed(b.path, "box is %d bytes, too short", len(b.body))
	}
	return x, nil
}

// timescale reads the timescale of an mvhd or mdhd box, which must not be
// 0.
func timescale(b *box) (uint32, error) {
	scale, err := afterTimes(b)
	if err == nil && scale == 0 {
		err = malformed(b.path, "timescale is 0")
	}
	return scale, err
}

// parseStsd fills in t's sample description from its single sample entry.
func parseStsd(b *box, t *Track) error {
	c := cursor{b: b.body}
	c.fullBox()
	n := c.u32()
	if c.short {
		return malformed(b.path, "box is %d bytes, too short", len(b.body))
	}
	switch {
	case n == 0:
		return malformed(b.path, "no sample entry")
	case n > 1:
		return unsupported(b.path, "%d sample entries; only one is supported", n)
	}
	es, err := children(c.b, b.path)
	if err != nil {
		return err
	}
	if len(es) != 1 {
		return malformed(b.path, "entry count is 1 but the box holds %d boxes", len(es))
	}
	e := es[0]
	t.FourCC = e.typ
	// SampleEntry: 6 reserved bytes and data_reference_index; then
	// VisualSampleEntry: 16 bytes, width, height, 50 bytes (resolution,
	// frame count, compressor name, depth); then child boxes.
	c = cursor{b: e.body}
	c.skip(8 + 16)
	t.Width, t.Height = int(c.u16()), int(c.u16())
	c.skip(50)
	if c.short {
		return malformed(e.path, "sample entry is %d bytes, too short for a visual sample entry", len(e.body))
	}
	known, ok := codecs[e.typ]
	if !ok {
		return nil // unknown layout after the visual fields: leave it
	}
	t.Codec = known.codec
	kids, err := children(c.b, e.path)
	if err != nil {
		return err
	}
	cb, err := only(kids, e.path, []string{known.config})
	if err != nil {
		return err
	}
	if cfg := cb[known.config]; cfg != nil {
		// A copy, so that the Track does not keep all of moov alive.
		t.Config = bytes.Clone(cfg.body)
		if t.Config == nil {
			t.Config = []byte{}
		}
	}
	return nil
}

// edit is what an edit list does to a track's times, in media units.
type edit struct {
	empty     int64 // sum of the initial empty edits
	mediaTime int64 // media_time of the non-empty edit
}

// parseEdts reads the edit list in edts. See the package documentation.
func parseEdts(edts *box, movieScale, mediaScale uint32) (edit, error) {
	kids, err := children(edts.body, edts.path)
	if err != nil {
		return edit{}, err
	}
	eb, err := only(kids, edts.path, []string{"elst"})
	if err != nil || eb["elst"] == nil {
		return edit{}, err
	}
	b := eb["elst"]
	if len(b.body) == 0 {
		return edit{}, malformed(b.path, "empty box")
	}
	size := 12
	switch b.body[0] {
	case 0:
	case 1:
		size = 20
	default:
		return edit{}, malformed(b.path, "unknown version %d", b.body[0])
	}
	_, n, entries, err := table(b, size)
	if err != nil {
		return edit{}, err
	}
	var e edit
	nonEmpty := 0
	for i := range n {
		c := cursor{b: entries[i*size : (i+1)*size]}
		var dur uint64
		var mt int64
		if size == 12 {
			dur, mt = uint64(c.u32()), int64(int32(c.u32()))
		} else {
			dur, mt = c.u64(), int64(c.u64())
		}
		rate := c.u32()
		switch {
		case mt == -1:
			if nonEmpty > 0 {
				continue // after the media: changes no sample's time
			}
			d, ok := rescale(dur, mediaScale, movieScale)
			if !ok || d > maxTime-e.empty {
				return edit{}, malformed(b.path, "entry %d: empty edit of %d is out of range", i, dur)
			}
			e.empty += d
		case mt < 0 || mt > maxTime:
			return edit{}, malformed(b.path, "entry %d: media time %d is out of range", i, mt)
		case nonEmpty > 0:
			return edit{}, unsupported(b.path, "more than one non-empty edit")
		case rate != 1<<16:
			return edit{}, unsupported(b.path, "entry %d: media rate %#x; only 1.0 is supported", i, rate)
		default:
			nonEmpty++
			e.mediaTime = mt
		}
	}
	return e, nil
}

// rescale returns d*to/from rounded to nearest, as FFmpeg's av_rescale,
// and false if the result does not fit in an int64.
func rescale(d uint64, to, from uint32) (int64, bool) {
	hi, lo := bits.Mul64(d, uint64(to))
	lo, carry := bits.Add64(lo, uint64(from/2), 0)
	hi += carry
	if hi >= uint64(from) {
		return 0, false
	}
	q, _ := bits.Div64(hi, lo, uint64(from))
	if q > 1<<63-1 {
		return 0, false
	}
	return int64(q), true
}
