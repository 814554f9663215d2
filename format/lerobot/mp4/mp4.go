package mp4

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Limits on what Parse accepts; see the package documentation.
const (
	// MaxMoovSize is the largest moov box Parse reads.
	MaxMoovSize = 256 << 20
	// MaxSamples is the most samples Parse returns across all video tracks.
	MaxSamples = 1 << 24
	// maxTopBoxes bounds the number of top-level box headers Parse reads.
	maxTopBoxes = 4096
)

// ErrMalformed matches every error about the file's structure, including
// those that also match ErrTruncated.
var ErrMalformed = errors.New("malformed MP4")

// ErrTruncated matches errors saying that the file ends before a box or a
// sample it declares. Such errors also match ErrMalformed.
var ErrTruncated = errors.New("truncated MP4")

// ErrUnsupported matches errors about well-formed files that use a feature
// this package does not handle: fragmented MP4, stz2, several sample
// descriptions in one track, or edit lists other than FFmpeg's usual ones.
// It does not match ErrMalformed.
var ErrUnsupported = errors.New("unsupported MP4")

// Error is what Parse returns about the file's bytes. It matches exactly
// one of ErrMalformed, ErrTruncated (which also matches ErrMalformed) or
// ErrUnsupported with errors.Is.
type Error struct {
	// Path names the box where the problem is, e.g.
	// "moov/trak[0]/mdia/minf/stbl/stsz", with trak boxes counted from 0;
	// it is empty for problems with the file as a whole.
	Path string
	// Reason says what is wrong.
	Reason string

	kind error
}

// Error returns "mp4: ", the path, and the reason.
func (e *Error) Error() string {
	if e.Path == "" {
		return "mp4: " + e.Reason
	}
	return "mp4: " + e.Path + ": " + e.Reason
}

// Is reports whether target is the sentinel this error matches.
func (e *Error) Is(target error) bool {
	return target == e.kind || (e.kind == ErrTruncated && target == ErrMalformed)
}

func malformed(path, format string, args ...any) error {
	return &Error{Path: path, Reason: fmt.Sprintf(format, args...), kind: ErrMalformed}
}

func truncated(path, format string, args ...any) error {
	return &Error{Path: path, Reason: fmt.Sprintf(format, args...), kind: ErrTruncated}
}

func unsupported(path, format string, args ...any) error {
	return &Error{Path: path, Reason: fmt.Sprintf(format, args...), kind: ErrUnsupported}
}

// File is what Parse found in an MP4 file.
type File struct {
	// Tracks are the video tracks, in file order.
	Tracks []Track
	// Skipped are the handler types of the other tracks, in file order,
	// e.g. "soun".
	Skipped []string
	// Truncated, set only by ParsePartial, is the error Parse returns for
	// the file: it ends inside a box after moov, and samples whose bytes
	// lie past its end have none there.
	Truncated error
}

// Track is one video track's sample description and sample table.
type Track struct {
	// ID is the track ID from tkhd.
	ID uint32
	// FourCC is the sample entry type: "av01", "avc1", "avc3", "hvc1",
	// "hev1", or whatever else the file has.
	FourCC string
	// Codec is "av1", "h264" or "hevc" for the FourCCs above, and "" for
	// any other: the caller reports the codec as unknown, naming FourCC.
	Codec string
	// Config is the payload of the sample entry's av1C, avcC or hvcC box
	// (FFmpeg's extradata), or nil when the box is absent or Codec is "".
	Config []byte
	// Width and Height are the sample entry's, in pixels.
	Width, Height int
	// Timescale is the number of time units per second, from mdhd.
	Timescale uint32
	// Samples are in decode order.
	Samples []Sample
}

// Sample locates one sample (one encoded frame) and gives its times.
type Sample struct {
	// Offset is the absolute file offset of the sample's first byte.
	Offset int64
	// Size is the sample's length in bytes.
	Size uint32
	// DTS is the decode time and PTS the presentation time, in the
	// track's timescale, after the edit list (see the package
	// documentation).
	DTS, PTS int64
	// Key is true for sync samples: those listed in stss, or every
	// sample when the track has no stss.
	Key bool
}

// Parse reads the top-level box headers of the file of the given size
// through r, then its moov box in one read, and returns the video tracks.
// It never reads mdat. Every sample's bytes must lie within size. Errors
// about the file's bytes are *Error values; see the package documentation.
func Parse(r io.ReaderAt, size int64) (*File, error) {
	return parse(r, size, false)
}

// ParsePartial is Parse for a file that may have lost its end, as a
// faststart file (moov before mdat) cut short has: when moov is whole and
// the file ends inside a box after it, the tracks come back with every
// sample that box was to hold, and File.Truncated says where the file
// ends. A sample whose bytes lie past size is listed where the file was
// to hold it; its reader must check it against size. Samples must still
// lie within the boxes the file declares. A file whose moov is lost (cut
// before or inside it, as a file with moov last is by any cut in mdat) is
// the error Parse returns.
func ParsePartial(r io.ReaderAt, size int64) (*File, error) {
	return parse(r, size, true)
}

func parse(r io.ReaderAt, size int64, partial bool) (*File, error) {
	if size < 0 {
		return nil, fmt.Errorf("mp4: negative file size %d", size)
	}
	moov, err := findMoov(r, size)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, moov.size-moov.hdr)
	if err := readFullAt(r, buf, moov.off+moov.hdr); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, truncated("moov", "the file ends before the box's %d bytes at offset %d", moov.size, moov.off)
		}
		return nil, fmt.Errorf("mp4: read moov at offset %d: %w", moov.off, err)
	}
	if partial && moov.cut != nil {
		// Samples may lie anywhere the boxes declare; those past size are
		// lost, which Parse reports as it would.
		f, err := parseMoov(buf, bounds{size, moov.declared})
		if err != nil {
			return nil, err
		}
		if _, err := parseMoov(buf, bounds{size, size}); err != nil {
			f.Truncated = err
		} else {
			f.Truncated = moov.cut
		}
		return f, nil
	}
	f, err := parseMoov(buf, bounds{size, size})
	if err != nil {
		return nil, err
	}
	if moov.cut != nil {
		// Every sample fits, but the file still ends inside a box.
		return nil, moov.cut
	}
	return f, nil
}

// topBox is a box at the top level of the file.
type topBox struct {
	off, hdr, size int64
	// cut is a truncation found after moov, reported once moov's samples
	// have been checked (they name the damage more precisely), and
	// declared the size the file was to have: the end of the box it ends
	// in.
	cut      error
	declared int64
}

// findMoov reads the top-level box headers and returns the moov box.
func findMoov(r io.ReaderAt, size int64) (topBox, error) {
	var moov topBox
	found := false
	var hdr [16]byte
	for off, n := int64(0), 0; off < size; n++ {
		if n == maxTopBoxes {
			return moov, malformed("", "more than %d top-level boxes", maxTopBoxes)
		}
		if size-off < 8 {
			return moov, malformed("", "%d trailing bytes at offset %d, too few for a box header", size-off, off)
		}
		if err := readHeader(r, hdr[:8], off, size); err != nil {
			return moov, err
		}
		typ := string(hdr[4:8])
		if !printable(typ) || (n == 0 && !firstBoxes[typ]) {
			return moov, malformed("", "box type %q at offset %d: not an MP4 file", typ, off)
		}
		bsize, hlen := uint64(binary.BigEndian.Uint32(hdr[:])), uint64(8)
		switch bsize {
		case 0:
			bsize = uint64(size - off)
		case 1:
			if size-off < 16 {
				return moov, truncated(typ, "the file ends inside the 64-bit size of the box at offset %d", off)
			}
			if err := readHeader(r, hdr[8:16], off+8, size); err != nil {
				return moov, err
			}
			bsize, hlen = binary.BigEndian.Uint64(hdr[8:]), 16
		}
		if bsize < hlen {
			return moov, malformed(typ, "box at offset %d has size %d, less than its %d-byte header", off, bsize, hlen)
		}
		switch typ {
		case "moof", "mfra":
			return moov, unsupported(typ, "fragmented MP4 is not supported")
		case "moov":
			if found {
				return moov, malformed(typ, "second moov box at offset %d", off)
			}
			if bsize > MaxMoovSize {
				return moov, unsupported(typ, "box is %d bytes, more than the limit of %d", bsize, MaxMoovSize)
			}
		}
		if bsize > uint64(size-off) {
			cut := truncated(typ, "box at offset %d has size %d, but the file ends %d bytes into it", off, bsize, size-off)
			if typ == "moov" || !found {
				return moov, cut
			}
			moov.cut = cut
			if bsize > math.MaxInt64-uint64(off) {
				return moov, cut // declares more than any file holds
			}
			moov.declared = off + int64(bsize)
			break
		}
		if typ == "moov" {
			found = true
			moov.off, moov.hdr, moov.size = off, int64(hlen), int64(bsize)
		}
		off += int64(bsize)
	}
	if !found {
		return moov, malformed("", "no moov box in %d bytes", size)
	}
	return moov, nil
}

// firstBoxes are the box types an MP4 file may start with.
var firstBoxes = map[string]bool{
	"ftyp": true, "styp": true, "moov": true, "mdat": true, "free": true,
	"skip": true, "wide": true, "pdin": true, "uuid": true, "meta": true,
}

// readHeader reads a box header field at off, in a file of the given size.
func readHeader(r io.ReaderAt, p []byte, off, size int64) error {
	err := readFullAt(r, p, off)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		return truncated("", "the reader ends before offset %d, inside the file size %d it was given", off+int64(len(p)), size)
	default:
		return fmt.Errorf("mp4: read box header at offset %d: %w", off, err)
	}
}

// printable reports whether a box type is four printable ASCII characters,
// as every top-level box type is.
func printable(typ string) bool {
	for i := 0; i < len(typ); i++ {
		if typ[i] < 0x20 || typ[i] > 0x7e {
			return false
		}
	}
	return true
}

// readFullAt reads exactly len(p) bytes at off. A short read because the
// file ends is reported as io.ErrUnexpectedEOF; other errors are returned as
// they are.
func readFullAt(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil // io.ReaderAt may report io.EOF with a full read
	}
	if err == nil || errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseMoov parses the body of the moov box of a file with the given
// bounds.
func parseMoov(b []byte, fb bounds) (*File, error) {
	kids, err := children(b, "moov")
	if err != nil {
		return nil, err
	}
	var mvhd *box
	for i := range kids {
		switch kids[i].typ {
		case "mvex":
			return nil, unsupported(kids[i].path, "fragmented MP4 is not supported")
		case "mvhd":
			if mvhd != nil {
				return nil, malformed(kids[i].path, "repeated")
			}
			mvhd = &kids[i]
		}
	}
	if mvhd == nil {
		return nil, malformed("moov", "no mvhd box")
	}
	movieScale, err := parseMvhd(mvhd)
	if err != nil {
		return nil, err
	}
	f := &File{}
	budget := MaxSamples
	for _, k := range kids {
		if k.typ != "trak" {
			continue
		}
		t, handler, err := parseTrak(k, movieScale, fb, budget)
		if err != nil {
			return nil, err
		}
		if handler != "vide" {
			f.Skipped = append(f.Skipped, handler)
			continue
		}
		budget -= len(t.Samples)
		f.Tracks = append(f.Tracks, t)
	}
	return f, nil
}

// parseMvhd returns the movie timescale.
func parseMvhd(b *box) (uint32, error) { return timescale(b) }
