package mp4

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// TrackConfig describes the one video track a Writer writes.
type TrackConfig struct {
	// Codec is "av1" or "h264"; Config is the av1C or avcC payload.
	Codec  string
	Config []byte
	// Width and Height are the frame size in pixels.
	Width, Height int
	// Timescale is the media timescale, units per second.
	Timescale uint32
}

// WriteSample is one sample given to a Writer: its bytes, its times in the
// track's timescale, how long it lasts, and whether it is a sync sample.
type WriteSample struct {
	Data     []byte
	DTS, PTS int64
	Duration uint32
	Key      bool
}

// samplesPerChunk is how many samples a chunk (an stco entry) holds.
const samplesPerChunk = 32

// movieTimescale is mvhd's timescale, FFmpeg's.
const movieTimescale = 1000

// Writer writes a non-fragmented MP4 file with one video track, as
// FFmpeg's mov muxer lays it out with faststart, which LeRobot's encoder
// asks for: ftyp, moov, free, then mdat with the samples. Samples are
// written as they come, after a free box and mdat's header; Close moves
// them up by moov's size and writes moov before them, so that a file cut
// short keeps its sample table and loses only the samples past the cut
// (see ParsePartial). The free box is the room mdat's header takes when
// it needs a 64-bit size. Samples must come in decode order with DTS
// increasing.
type Writer struct {
	w     WriterFile
	cfg   TrackConfig
	start int64 // offset of the free box before mdat
	off   int64 // offset of the next sample
	// samples' table entries
	sizes    []uint32
	offsets  []int64
	dts, pts []int64
	durs     []uint32
	keys     []bool
	closed   bool
}

// WriterFile is what a Writer writes: an empty file it appends to, and
// reads and writes at offsets when it closes (an *os.File).
type WriterFile interface {
	io.Writer
	io.ReaderAt
	io.WriterAt
}

// NewWriter writes ftyp and mdat's header to w, which must be at offset 0
// of an empty file.
func NewWriter(w WriterFile, cfg TrackConfig) (*Writer, error) {
	if _, ok := entryTypes[cfg.Codec]; !ok {
		return nil, fmt.Errorf("mp4: writer: codec %q (valid: av1, h264)", cfg.Codec)
	}
	if cfg.Timescale == 0 || cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > 0xffff || cfg.Height > 0xffff {
		return nil, fmt.Errorf("mp4: writer: timescale %d, size %dx%d", cfg.Timescale, cfg.Width, cfg.Height)
	}
	brand := entryTypes[cfg.Codec].fourCC
	ftyp := box4("ftyp", []byte("isom"), u32be(0x200), []byte("isom"), []byte("iso2"), []byte(brand), []byte("mp41"))
	head := append(ftyp, box4("free")...)
	head = append(head, 0, 0, 0, 8, 'm', 'd', 'a', 't')
	if _, err := w.Write(head); err != nil {
		return nil, fmt.Errorf("mp4: writer: %w", err)
	}
	return &Writer{w: w, cfg: cfg, start: int64(len(ftyp)), off: int64(len(head))}, nil
}

// entryTypes are the sample entry and configuration box per codec.
var entryTypes = map[string]struct{ fourCC, config string }{
	"av1":  {"av01", "av1C"},
	"h264": {"avc1", "avcC"},
}

// Write appends one sample to mdat.
func (w *Writer) Write(s WriteSample) error {
	if w.closed {
		return errors.New("mp4: writer closed")
	}
	if n := len(w.dts); n > 0 && s.DTS <= w.dts[n-1] {
		return fmt.Errorf("mp4: writer: sample %d has DTS %d after %d", n, s.DTS, w.dts[n-1])
	}
	if len(s.Data) == 0 || uint64(len(s.Data)) > 0xffffffff {
		return fmt.Errorf("mp4: writer: sample %d of %d bytes", len(w.dts), len(s.Data))
	}
	if _, err := w.w.Write(s.Data); err != nil {
		return fmt.Errorf("mp4: writer: %w", err)
	}
	w.sizes = append(w.sizes, uint32(len(s.Data)))
	w.offsets = append(w.offsets, w.off)
	w.dts = append(w.dts, s.DTS)
	w.pts = append(w.pts, s.PTS)
	w.durs = append(w.durs, s.Duration)
	w.keys = append(w.keys, s.Key)
	w.off += int64(len(s.Data))
	return nil
}

// Size is the number of bytes written so far, moov not counted: the
// file's size before Close.
func (w *Writer) Size() int64 { return w.off }

// moveChunk is the most bytes Close moves at once.
const moveChunk = 1 << 20

// Close moves the samples up by moov's size, writes moov after ftyp and
// sets mdat's size. It does not close the underlying file.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if len(w.sizes) == 0 {
		return errors.New("mp4: writer: no samples")
	}
	// The samples' offsets grow by moov's size, which grows when they
	// need 64-bit offsets: build it until its size is the shift it
	// assumes (at most twice more).
	moov := w.moov(0)
	for {
		next := w.moov(int64(len(moov)))
		if len(next) == len(moov) {
			moov = next
			break
		}
		moov = next
	}
	shift := int64(len(moov))
	// Move [free, end) up by shift, the last bytes first.
	buf := make([]byte, min(moveChunk, w.off-w.start))
	for end := w.off; end > w.start; {
		n := min(int64(len(buf)), end-w.start)
		if _, err := w.w.ReadAt(buf[:n], end-n); err != nil {
			return fmt.Errorf("mp4: writer: %w", err)
		}
		if _, err := w.w.WriteAt(buf[:n], end-n+shift); err != nil {
			return fmt.Errorf("mp4: writer: %w", err)
		}
		end -= n
	}
	if _, err := w.w.WriteAt(moov, w.start); err != nil {
		return fmt.Errorf("mp4: writer: %w", err)
	}
	// mdat runs from its header (8 bytes after the free box) to the end.
	free := w.start + shift
	size := uint64(w.off - (w.start + 8))
	var hdr []byte
	at := free + 8
	if size <= 0xffffffff {
		hdr = binary.BigEndian.AppendUint32(nil, uint32(size))
	} else {
		// Take the free box's 8 bytes: a 16-byte header with a 64-bit size.
		at = free
		hdr = append(u32be(1), 'm', 'd', 'a', 't')
		hdr = binary.BigEndian.AppendUint64(hdr, size+8)
	}
	if _, err := w.w.WriteAt(hdr, at); err != nil {
		return fmt.Errorf("mp4: writer: %w", err)
	}
	return nil
}

// moov builds the movie box from the sample table, with every sample
// shift bytes further into the file than it was written.
func (w *Writer) moov(shift int64) []byte {
	n := len(w.sizes)
	// Decode times start at 0 (stts); presentation times keep their
	// offsets in ctts, and an edit list starts the track at its first
	// presentation time, as FFmpeg's muxer does.
	base := w.dts[0]
	var mediaDur uint64
	for _, d := range w.durs {
		mediaDur += uint64(d)
	}
	minPTS := w.pts[0] - base
	needCtts := false
	for i := range n {
		minPTS = min(minPTS, w.pts[i]-base)
		needCtts = needCtts || w.pts[i] != w.dts[i]
	}
	movieDur := (mediaDur*movieTimescale + uint64(w.cfg.Timescale)/2) / uint64(w.cfg.Timescale)

	mvhd := full4("mvhd", 0, 0, u32be(0, 0, movieTimescale, uint32(movieDur), 0x00010000), u16be(0x0100), zero(10), matrix(), zero(24), u32be(2))
	tkhd := full4("tkhd", 0, 3, u32be(0, 0, 1, 0, uint32(movieDur)), zero(8), u16be(0, 0, 0, 0), matrix(),
		u32be(uint32(w.cfg.Width)<<16, uint32(w.cfg.Height)<<16))
	var edts []byte
	if minPTS != 0 {
		edts = box4("edts", full4("elst", 0, 0, u32be(1, uint32(movieDur), uint32(minPTS), 0x00010000)))
	}
	mdhd := full4("mdhd", 0, 0, u32be(0, 0, w.cfg.Timescale, uint32(mediaDur)), u16be(0x55c4, 0)) // language "und"
	hdlr := full4("hdlr", 0, 0, u32be(0), []byte("vide"), zero(12), []byte("VideoHandler\x00"))
	vmhd := full4("vmhd", 0, 1, zero(8))
	dinf := box4("dinf", full4("dref", 0, 0, u32be(1), full4("url ", 0, 1)))

	et := entryTypes[w.cfg.Codec]
	entry := box4(et.fourCC, zero(6), u16be(1), zero(16), u16be(uint16(w.cfg.Width), uint16(w.cfg.Height)),
		u32be(0x00480000, 0x00480000, 0), u16be(1), zero(32), u16be(0x0018, 0xffff), box4(et.config, w.cfg.Config))
	stsd := full4("stsd", 0, 0, u32be(1), entry)

	var stts []byte
	runs := 0
	for i := 0; i < n; {
		j := i
		for j < n && w.durs[j] == w.durs[i] {
			j++
		}
		stts = append(stts, u32be(uint32(j-i), w.durs[i])...)
		runs++
		i = j
	}
	stbl := []byte{}
	stbl = append(stbl, stsd...)
	stbl = append(stbl, full4("stts", 0, 0, u32be(uint32(runs)), stts)...)
	allKey := true
	var stss []byte
	keys := 0
	for i, k := range w.keys {
		if k {
			stss = append(stss, u32be(uint32(i+1))...)
			keys++
		} else {
			allKey = false
		}
	}
	if !allKey {
		stbl = append(stbl, full4("stss", 0, 0, u32be(uint32(keys)), stss)...)
	}
	if needCtts {
		var ctts []byte
		runs, version := 0, uint8(0)
		for i := 0; i < n; {
			off := w.pts[i] - w.dts[i]
			if off < 0 {
				version = 1
			}
			j := i
			for j < n && w.pts[j]-w.dts[j] == off {
				j++
			}
			ctts = append(ctts, u32be(uint32(j-i), uint32(int32(off)))...)
			runs++
			i = j
		}
		stbl = append(stbl, full4("ctts", version, 0, u32be(uint32(runs)), ctts)...)
	}
	chunks := (n + samplesPerChunk - 1) / samplesPerChunk
	stsc := u32be(1, samplesPerChunk, 1)
	entries := uint32(1)
	if last := n - (chunks-1)*samplesPerChunk; chunks == 1 {
		stsc = u32be(1, uint32(last), 1)
	} else if last != samplesPerChunk {
		stsc = append(stsc, u32be(uint32(chunks), uint32(last), 1)...)
		entries = 2
	}
	stbl = append(stbl, full4("stsc", 0, 0, u32be(entries), stsc)...)
	stsz := u32be(0, uint32(n))
	for _, s := range w.sizes {
		stsz = append(stsz, u32be(s)...)
	}
	stbl = append(stbl, full4("stsz", 0, 0, stsz)...)
	wide := w.offsets[n-1]+shift > 0xffffffff
	co := u32be(uint32(chunks))
	for c := range chunks {
		off := w.offsets[c*samplesPerChunk] + shift
		if wide {
			co = binary.BigEndian.AppendUint64(co, uint64(off))
		} else {
			co = append(co, u32be(uint32(off))...)
		}
	}
	if wide {
		stbl = append(stbl, full4("co64", 0, 0, co)...)
	} else {
		stbl = append(stbl, full4("stco", 0, 0, co)...)
	}

	minf := box4("minf", vmhd, dinf, box4("stbl", stbl))
	trak := box4("trak", tkhd, edts, box4("mdia", mdhd, hdlr, minf))
	return box4("moov", mvhd, trak)
}

// box4 is a box of the given type around parts.
func box4(typ string, parts ...[]byte) []byte {
	size := 8
	for _, p := range parts {
		size += len(p)
	}
	out := make([]byte, 0, size)
	out = binary.BigEndian.AppendUint32(out, uint32(size))
	out = append(out, typ...)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// full4 is a full box: version and flags, then parts.
func full4(typ string, version uint8, flags uint32, parts ...[]byte) []byte {
	return box4(typ, append([][]byte{u32be(uint32(version)<<24 | flags)}, parts...)...)
}

func u32be(vs ...uint32) []byte {
	out := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		out = binary.BigEndian.AppendUint32(out, v)
	}
	return out
}

func u16be(vs ...uint16) []byte {
	out := make([]byte, 0, 2*len(vs))
	for _, v := range vs {
		out = binary.BigEndian.AppendUint16(out, v)
	}
	return out
}

func zero(n int) []byte { return make([]byte, n) }

// matrix is the identity transformation matrix of mvhd and tkhd.
func matrix() []byte {
	return u32be(0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000)
}
