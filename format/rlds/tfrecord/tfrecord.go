// Package tfrecord owns the TFRecord file framing: writing records, locating
// them (Index over a random-access file, Indexer over a stream teed from a
// download, Scanner over any reader) and reading them back with both CRC32C
// checks.
//
// A record is
//
//	uint64 length (little-endian)
//	uint32 masked CRC32C of the 8 length bytes
//	length bytes of data
//	uint32 masked CRC32C of the data
//
// where mask(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8.
//
// Every problem with the bytes themselves (a CRC mismatch, a truncated
// record, a length past the file or past a limit) is a *CorruptError, which
// matches ErrCorrupt with errors.Is. I/O errors from the underlying reader
// are returned wrapped but do not match ErrCorrupt. Nothing here panics on
// any input.
//
// tfrecord belongs to the RLDS format: only format/rlds and its writer
// (format/rlds/synth) import it. It imports nothing else of oxefs.
package tfrecord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

const (
	// HeaderLen is the size of a record's header: length and length CRC.
	HeaderLen = 12
	// FooterLen is the size of a record's footer: the data CRC.
	FooterLen = 4
	// overhead is the framing around a payload.
	overhead = HeaderLen + FooterLen
	// defaultMaxRecord is the limit used when a constructor is given
	// maxRecord <= 0.
	defaultMaxRecord = 1 << 30
)

// castagnoli is the CRC32C table; hash/crc32 uses the SSE4.2/ARMv8
// instructions for it where the CPU has them.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MaskedCRC returns the masked CRC32C of b, as stored in TFRecord framing.
func MaskedCRC(b []byte) uint32 { return mask(crc32.Checksum(b, castagnoli)) }

func mask(crc uint32) uint32 { return ((crc >> 15) | (crc << 17)) + 0xa282ead8 }

// ErrCorrupt matches every *CorruptError.
var ErrCorrupt = errors.New("tfrecord: corrupt")

// Reasons reported in CorruptError.Reason.
const (
	reasonLengthCRC = "length crc mismatch"
	reasonDataCRC   = "data crc mismatch"
	reasonTruncated = "truncated record"
)

// CorruptError describes a bad record. Offset is the byte offset of the
// record's header in the file; Index is the record's number (0-based), or -1
// when the caller of ReadRecord did not know it; Reason says what is wrong.
type CorruptError struct {
	Offset int64
	Index  int
	Reason string
}

func (e *CorruptError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("tfrecord: record at offset %d: %s", e.Offset, e.Reason)
	}
	return fmt.Sprintf("tfrecord: record %d at offset %d: %s", e.Index, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

func corrupt(off int64, idx int, reason string) error {
	return &CorruptError{Offset: off, Index: idx, Reason: reason}
}

func tooLong(off int64, idx int, n uint64, limit int64) error {
	return corrupt(off, idx, fmt.Sprintf("record length %d exceeds limit %d", n, limit))
}

// Span locates one record: Offset of its header in the file, Len of its
// payload.
type Span struct {
	Offset int64
	Len    int64
}

// End returns the offset just past the record's footer.
func (s Span) End() int64 { return s.Offset + overhead + s.Len }

// putHeader writes the 12-byte header for a payload of n bytes into h.
func putHeader(h []byte, n uint64) {
	binary.LittleEndian.PutUint64(h[:8], n)
	binary.LittleEndian.PutUint32(h[8:12], MaskedCRC(h[:8]))
}

// parseHeader returns the payload length in h, and whether its CRC matches.
func parseHeader(h []byte) (n uint64, ok bool) {
	n = binary.LittleEndian.Uint64(h[:8])
	return n, binary.LittleEndian.Uint32(h[8:12]) == MaskedCRC(h[:8])
}

// AppendRecord appends data framed as one record to dst.
func AppendRecord(dst, data []byte) []byte {
	var h [HeaderLen]byte
	putHeader(h[:], uint64(len(data)))
	dst = append(dst, h[:]...)
	dst = append(dst, data...)
	return binary.LittleEndian.AppendUint32(dst, MaskedCRC(data))
}

// Writer writes records to an underlying writer. It does not buffer: wrap
// the destination in a bufio.Writer when records are small.
type Writer struct {
	w   io.Writer
	hdr [HeaderLen]byte
	ftr [FooterLen]byte
}

// NewWriter returns a Writer that frames records onto w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes data as one record. The payload is passed to the underlying
// writer as is, without copying.
func (w *Writer) Write(data []byte) error {
	putHeader(w.hdr[:], uint64(len(data)))
	binary.LittleEndian.PutUint32(w.ftr[:], MaskedCRC(data))
	if _, err := w.w.Write(w.hdr[:]); err != nil {
		return fmt.Errorf("tfrecord: write header: %w", err)
	}
	if _, err := w.w.Write(data); err != nil {
		return fmt.Errorf("tfrecord: write data: %w", err)
	}
	if _, err := w.w.Write(w.ftr[:]); err != nil {
		return fmt.Errorf("tfrecord: write footer: %w", err)
	}
	return nil
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

// Index reads only the 12-byte headers of a file of the given size and
// returns every record's span. It checks each length CRC and that every
// record lies within the file; a file that does not end exactly on a record
// boundary is a *CorruptError ("truncated record"). Data CRCs are not
// checked here: ReadRecord checks them when a record is read.
//
// On error Index also returns the spans of the records before the bad one,
// which are still readable: framing damage loses the rest of the file, not
// all of it.
func Index(r io.ReaderAt, size int64) ([]Span, error) {
	if size < 0 {
		return nil, fmt.Errorf("tfrecord: negative file size %d", size)
	}
	var spans []Span
	var hdr [HeaderLen]byte
	for off := int64(0); off < size; {
		idx := len(spans)
		if size-off < HeaderLen {
			return spans, corrupt(off, idx, reasonTruncated)
		}
		if err := readFullAt(r, hdr[:], off); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				// The file is shorter than the size we were told.
				return spans, corrupt(off, idx, reasonTruncated)
			}
			return spans, fmt.Errorf("tfrecord: record %d at offset %d: %w", idx, off, err)
		}
		n, ok := parseHeader(hdr[:])
		if !ok {
			return spans, corrupt(off, idx, reasonLengthCRC)
		}
		if size-off < overhead || n > uint64(size-off-overhead) {
			return spans, corrupt(off, idx, reasonTruncated)
		}
		spans = append(spans, Span{Offset: off, Len: int64(n)})
		off += overhead + int64(n)
	}
	return spans, nil
}

// ReadRecord reads the payload of the record at s into buf, which is grown
// if its capacity is too small, and returns it. It verifies the length CRC,
// that the header agrees with s.Len, and the data CRC. The result's index is
// unknown here, so a *CorruptError from ReadRecord has Index -1; callers
// that know it may set it.
//
// Spans should come from Index, Indexer or Scanner over the same file: the
// header is read and checked before buf is grown to s.Len, so a made-up span
// is reported as corrupt rather than allocated.
func ReadRecord(r io.ReaderAt, s Span, buf []byte) ([]byte, error) {
	return readRecord(r, s, buf, true)
}

// ReadRecordKnown is ReadRecord for a record whose data CRC the caller has
// seen pass in the same, unchanged file: it verifies the length CRC and
// that the header agrees with s.Len, and reads the data without computing
// its CRC (a record cut short, its footer missing, still fails).
func ReadRecordKnown(r io.ReaderAt, s Span, buf []byte) ([]byte, error) {
	return readRecord(r, s, buf, false)
}

func readRecord(r io.ReaderAt, s Span, buf []byte, checkData bool) ([]byte, error) {
	if s.Offset < 0 || s.Len < 0 || s.Len > math.MaxInt-overhead || s.Offset > math.MaxInt64-overhead-s.Len {
		return buf[:0], fmt.Errorf("tfrecord: invalid span {Offset: %d, Len: %d}", s.Offset, s.Len)
	}
	if cap(buf) < HeaderLen {
		// Sized for the span, but not beyond 1 MiB until the header
		// confirms the length.
		buf = make([]byte, 0, max(HeaderLen, min(s.Len+FooterLen, 1<<20)))
	}
	hdr := buf[:HeaderLen]
	if err := readFullAt(r, hdr, s.Offset); err != nil {
		return buf[:0], readErr(err, s.Offset)
	}
	n, ok := parseHeader(hdr)
	if !ok {
		return buf[:0], corrupt(s.Offset, -1, reasonLengthCRC)
	}
	if n != uint64(s.Len) {
		return buf[:0], corrupt(s.Offset, -1, fmt.Sprintf("record length %d does not match span length %d", n, s.Len))
	}
	need := int(s.Len) + FooterLen
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	if !checkData {
		// The footer too: a record cut short still fails.
		if err := readFullAt(r, buf, s.Offset+HeaderLen); err != nil {
			return buf[:0], readErr(err, s.Offset)
		}
		return buf[:s.Len], nil
	}
	// Read and check in chunks, so that each chunk is still in cache when
	// the CRC reads it. (One big copy out of an in-memory reader uses
	// non-temporal stores from 1 MiB up, which left the CRC reading from
	// DRAM at half the speed.)
	crc := uint32(0)
	for off := 0; off < need; off += readChunk {
		chunk := buf[off:min(off+readChunk, need)]
		if err := readFullAt(r, chunk, s.Offset+HeaderLen+int64(off)); err != nil {
			return buf[:0], readErr(err, s.Offset)
		}
		if data := min(len(chunk), int(s.Len)-off); data > 0 {
			crc = crc32.Update(crc, castagnoli, chunk[:data])
		}
	}
	if binary.LittleEndian.Uint32(buf[s.Len:]) != mask(crc) {
		return buf[:0], corrupt(s.Offset, -1, reasonDataCRC)
	}
	return buf[:s.Len], nil
}

// readChunk is how much ReadRecord reads before checking it.
const readChunk = 256 << 10

func readErr(err error, off int64) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return corrupt(off, -1, reasonTruncated)
	}
	return fmt.Errorf("tfrecord: record at offset %d: %w", off, err)
}
