package av

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// EncoderOptions tune an Encoder. The zero value is LeRobot's encoding:
// a keyframe every 2 frames, CRF 30, the encoder's default preset.
type EncoderOptions struct {
	// GOP is the keyframe interval in frames (FFmpeg's g); 0 means 2,
	// LeRobot's default.
	GOP int
	// CRF is the constant rate factor; 0 means 30, LeRobot's default.
	CRF int
	// Preset is the encoder's speed preset ("8" for libsvtav1, "veryfast"
	// for libx264, cpu-used for libaom-av1); "" keeps its default.
	Preset string
	// Threads is the encoder's thread count; 0 means 1, so that many
	// encoders run side by side without oversubscribing.
	Threads int
}

func (o EncoderOptions) withDefaults() EncoderOptions {
	if o.GOP <= 0 {
		o.GOP = 2
	}
	if o.CRF <= 0 {
		o.CRF = 30
	}
	if o.Threads <= 0 {
		o.Threads = 1
	}
	return o
}

// Packet is one compressed frame as an MP4 track stores it: OBUs without
// temporal delimiters for AV1, length-prefixed (4-byte) NAL units for
// H.264. PTS and DTS are in the encoder's time base, 1/fps.
type Packet struct {
	Data     []byte
	PTS, DTS int64
	Key      bool
}

// encoderNames are the libavcodec encoders tried per codec, preferred
// first.
var encoderNames = map[string][]string{
	"av1":  {"libsvtav1", "libaom-av1"},
	"h264": {"libx264"},
}

// encoderInstall names the packages whose libavcodec has the encoders.
const encoderInstall = "Debian's libavcodec59 (Debian 12) or libavcodec61 (Debian 13) is built with libsvtav1, libaom-av1 and libx264: apt-get install libavcodec59"

// RGBToYUV420 converts packed RGB24 (rows 3·w bytes apart) to 8-bit
// yuv420p planes with BT.601 limited-range integer arithmetic, chroma from
// the mean of each 2×2 block. w and h must be even. It is deterministic and
// the inverse, up to rounding, of what Frame.RGB does for untagged frames.
func RGBToYUV420(planes [3][]byte, strides [3]int, rgb []byte, w, h int) {
	for y := range h {
		row := rgb[y*w*3:][:w*3]
		py := planes[0][y*strides[0]:][:w]
		for x := range w {
			r, g, b := int32(row[3*x]), int32(row[3*x+1]), int32(row[3*x+2])
			py[x] = uint8((66*r+129*g+25*b+128)>>8 + 16)
		}
	}
	for cy := range h / 2 {
		r0 := rgb[2*cy*w*3:][:w*3]
		r1 := rgb[(2*cy+1)*w*3:][:w*3]
		pu := planes[1][cy*strides[1]:][:w/2]
		pv := planes[2][cy*strides[2]:][:w/2]
		for cx := range w / 2 {
			i := 6 * cx
			r := (int32(r0[i]) + int32(r0[i+3]) + int32(r1[i]) + int32(r1[i+3]) + 2) >> 2
			g := (int32(r0[i+1]) + int32(r0[i+4]) + int32(r1[i+1]) + int32(r1[i+4]) + 2) >> 2
			b := (int32(r0[i+2]) + int32(r0[i+5]) + int32(r1[i+2]) + int32(r1[i+5]) + 2) >> 2
			pu[cx] = uint8((-38*r-74*g+112*b+128)>>8 + 128)
			pv[cx] = uint8((112*r-94*g-18*b+128)>>8 + 128)
		}
	}
}

// configRecord turns an encoder's extradata into the MP4 sample entry's
// configuration record: av1C for AV1 (libsvtav1 and libaom give a bare
// sequence header OBU), avcC for H.264 (libx264 gives Annex B SPS and PPS).
// Extradata that already is a record is returned as it is.
func configRecord(codec string, extra []byte) ([]byte, error) {
	switch codec {
	case "av1":
		if len(extra) > 0 && extra[0]&0x80 != 0 {
			return extra, nil // already av1C
		}
		return av1C(extra)
	case "h264":
		if len(extra) > 0 && extra[0] == 1 {
			return extra, nil // already avcC
		}
		return avcC(extra)
	}
	return nil, fmt.Errorf("no configuration record for codec %q", codec)
}

// sampleOf rewrites one encoder packet as an MP4 sample: AV1 temporal
// delimiter and padding OBUs dropped (as FFmpeg's mov muxer does), H.264
// Annex B start codes replaced with 4-byte lengths. The result is a copy.
func sampleOf(codec string, pkt []byte) ([]byte, error) {
	switch codec {
	case "av1":
		var out []byte
		err := eachOBU(pkt, func(typ int, obu []byte) {
			if typ != obuTemporalDelimiter && typ != obuPadding {
				out = append(out, obu...)
			}
		})
		return out, err
	case "h264":
		var out []byte
		for _, nal := range annexB(pkt) {
			out = binary.BigEndian.AppendUint32(out, uint32(len(nal)))
			out = append(out, nal...)
		}
		if out == nil {
			return nil, errors.New("no NAL units")
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown codec %q", codec)
}

// AV1 OBU types (AV1 spec 6.2.2).
const (
	obuSequenceHeader    = 1
	obuTemporalDelimiter = 2
	obuPadding           = 15
)

// eachOBU calls visit with each OBU of data, header included. Every OBU
// but the last must carry its size.
func eachOBU(data []byte, visit func(typ int, obu []byte)) error {
	for len(data) > 0 {
		h := data[0]
		typ := int(h>>3) & 15
		n := 1
		if h&4 != 0 {
			n++ // extension header
		}
		if n > len(data) {
			return errors.New("truncated OBU header")
		}
		size := len(data) - n
		if h&2 != 0 {
			v, k := leb128(data[n:])
			if k == 0 || v > uint64(len(data)-n-k) {
				return errors.New("bad OBU size")
			}
			n += k
			size = int(v)
		}
		visit(typ, data[:n+size])
		data = data[n+size:]
	}
	return nil
}

// leb128 decodes an unsigned LEB128 value; k is 0 when it is malformed.
func leb128(b []byte) (v uint64, k int) {
	for i := 0; i < 8 && i < len(b); i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// annexB splits an Annex B byte stream at its start codes.
func annexB(b []byte) [][]byte {
	var nals [][]byte
	start := -1
	for i := 0; i+2 < len(b); {
		if b[i] == 0 && b[i+1] == 0 && b[i+2] == 1 {
			if start >= 0 {
				end := i
				for end > start && b[end-1] == 0 {
					end-- // a 4-byte start code's leading zero
				}
				nals = append(nals, b[start:end])
			}
			i += 3
			start = i
			continue
		}
		i++
	}
	if start >= 0 && start < len(b) {
		nals = append(nals, b[start:])
	}
	return nals
}

// avcC builds an AVCDecoderConfigurationRecord (ISO/IEC 14496-15 5.3.3)
// from Annex B SPS and PPS NAL units, with 4-byte NAL lengths. High
// profiles get the chroma and bit-depth fields for 4:2:0 8-bit, the only
// format Encoder writes.
func avcC(extra []byte) ([]byte, error) {
	var sps, pps [][]byte
	for _, nal := range annexB(extra) {
		if len(nal) == 0 {
			continue
		}
		switch nal[0] & 0x1f {
		case 7:
			sps = append(sps, nal)
		case 8:
			pps = append(pps, nal)
		}
	}
	if len(sps) == 0 || len(pps) == 0 || len(sps[0]) < 4 || len(sps) > 31 || len(pps) > 255 {
		return nil, fmt.Errorf("extradata of %d bytes holds %d SPS and %d PPS: not the H.264 parameter sets", len(extra), len(sps), len(pps))
	}
	out := []byte{1, sps[0][1], sps[0][2], sps[0][3], 0xff, 0xe0 | byte(len(sps))}
	for _, s := range sps {
		out = binary.BigEndian.AppendUint16(out, uint16(len(s)))
		out = append(out, s...)
	}
	out = append(out, byte(len(pps)))
	for _, p := range pps {
		out = binary.BigEndian.AppendUint16(out, uint16(len(p)))
		out = append(out, p...)
	}
	switch sps[0][1] {
	case 100, 110, 122, 144:
		out = append(out, 0xfc|1, 0xf8, 0xf8, 0) // 4:2:0, 8-bit, no SPS extensions
	}
	return out, nil
}

// av1C builds an AV1CodecConfigurationRecord (AV1 in ISOBMFF, 2.3) around
// the sequence header OBU in extra.
func av1C(extra []byte) ([]byte, error) {
	var seq []byte
	if err := eachOBU(extra, func(typ int, obu []byte) {
		if typ == obuSequenceHeader && seq == nil {
			seq = obu
		}
	}); err != nil {
		return nil, fmt.Errorf("extradata: %w", err)
	}
	if seq == nil {
		return nil, fmt.Errorf("extradata of %d bytes holds no AV1 sequence header", len(extra))
	}
	sh, err := parseSequenceHeader(seq)
	if err != nil {
		return nil, err
	}
	b1 := sh.profile<<5 | sh.level
	b2 := sh.tier<<7 | sh.highBitdepth<<6 | sh.twelveBit<<5 | sh.mono<<4 | sh.ssx<<3 | sh.ssy<<2 | sh.csp
	return append([]byte{0x81, b1, b2, 0}, seq...), nil
}

// seqHeader holds the sequence header fields av1C repeats.
type seqHeader struct {
	profile, level, tier          byte
	highBitdepth, twelveBit, mono byte
	ssx, ssy, csp                 byte
}

// bitReader reads big-endian bits; reading past the end sets short.
type bitReader struct {
	b     []byte
	pos   int
	short bool
}

func (r *bitReader) bits(n int) uint64 {
	var v uint64
	for range n {
		if r.pos >= 8*len(r.b) {
			r.short = true
			return 0
		}
		v = v<<1 | uint64(r.b[r.pos/8]>>(7-r.pos%8)&1)
		r.pos++
	}
	return v
}

func (r *bitReader) flag() bool { return r.bits(1) == 1 }

// uvlc reads a variable-length code (AV1 spec 4.10.3).
func (r *bitReader) uvlc() {
	zeros := 0
	for !r.flag() && !r.short && zeros < 32 {
		zeros++
	}
	r.bits(zeros)
}

// parseSequenceHeader reads a sequence header OBU (AV1 spec 5.5) as far as
// its color_config.
func parseSequenceHeader(obu []byte) (seqHeader, error) {
	var sh seqHeader
	n := 1
	if obu[0]&4 != 0 {
		n++
	}
	if obu[0]&2 != 0 {
		_, k := leb128(obu[n:])
		n += k
	}
	r := &bitReader{b: obu[n:]}
	sh.profile = byte(r.bits(3))
	r.bits(1) // still_picture
	reduced := r.flag()
	if reduced {
		sh.level = byte(r.bits(5))
	} else {
		timing, decoderModel := r.flag(), false
		bufferDelayLen := 0
		if timing {
			r.bits(32) // num_units_in_display_tick
			r.bits(32) // time_scale
			if r.flag() {
				r.uvlc() // num_ticks_per_picture_minus_1
			}
			decoderModel = r.flag()
			if decoderModel {
				bufferDelayLen = int(r.bits(5)) + 1
				r.bits(32) // num_units_in_decoding_tick
				r.bits(5)  // buffer_removal_time_length_minus_1
				r.bits(5)  // frame_presentation_time_length_minus_1
			}
		}
		displayDelay := r.flag()
		ops := int(r.bits(5)) + 1
		for i := range ops {
			r.bits(12) // operating_point_idc
			level := byte(r.bits(5))
			tier := byte(0)
			if level > 7 {
				tier = byte(r.bits(1))
			}
			if i == 0 {
				sh.level, sh.tier = level, tier
			}
			if decoderModel && r.flag() {
				r.bits(2*bufferDelayLen + 1)
			}
			if displayDelay && r.flag() {
				r.bits(4)
			}
		}
	}
	wbits, hbits := int(r.bits(4))+1, int(r.bits(4))+1
	r.bits(wbits + hbits)
	if !reduced && r.flag() { // frame_id_numbers_present_flag
		r.bits(7)
	}
	r.bits(3) // use_128x128_superblock, enable_filter_intra, enable_intra_edge
	if !reduced {
		r.bits(4) // interintra, masked compound, warped motion, dual filter
		orderHint := r.flag()
		if orderHint {
			r.bits(2) // jnt_comp, ref_frame_mvs
		}
		forceScreen := 2
		if !r.flag() { // seq_choose_screen_content_tools
			forceScreen = int(r.bits(1))
		}
		if forceScreen > 0 && !r.flag() { // seq_choose_integer_mv
			r.bits(1)
		}
		if orderHint {
			r.bits(3)
		}
	}
	r.bits(3) // superres, cdef, restoration
	// color_config
	sh.highBitdepth = byte(r.bits(1))
	if sh.profile == 2 && sh.highBitdepth == 1 {
		sh.twelveBit = byte(r.bits(1))
	}
	if sh.profile != 1 {
		sh.mono = byte(r.bits(1))
	}
	cp, tc, mc := uint64(2), uint64(2), uint64(2)
	if r.flag() { // color_description_present_flag
		cp, tc, mc = r.bits(8), r.bits(8), r.bits(8)
	}
	switch {
	case sh.mono == 1:
		sh.ssx, sh.ssy = 1, 1
	case cp == 1 && tc == 13 && mc == 0:
		// sRGB: 4:4:4
	default:
		r.bits(1) // color_range
		switch sh.profile {
		case 0:
			sh.ssx, sh.ssy = 1, 1
		case 1:
		default:
			if sh.twelveBit == 1 {
				sh.ssx = byte(r.bits(1))
				if sh.ssx == 1 {
					sh.ssy = byte(r.bits(1))
				}
			} else {
				sh.ssx = 1
			}
		}
		if sh.ssx == 1 && sh.ssy == 1 {
			sh.csp = byte(r.bits(2))
		}
	}
	if r.short {
		return sh, fmt.Errorf("AV1 sequence header of %d bytes is truncated", len(obu))
	}
	return sh, nil
}
