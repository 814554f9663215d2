package tfrecord

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Indexer is an io.Writer that consumes a whole TFRecord file streamed
// through it, for example teed from a download into the disk cache, and
// verifies both CRCs of every record as the bytes pass. It keeps only the
// running CRC and at most 12 bytes of a header, never a record, so its
// memory does not depend on record or file size.
//
// Write reports the first corruption it finds (and every later Write and
// Close repeat it). Inside an io.MultiWriter or io.TeeReader that error
// stops the copy; a caller that wants to keep a shard whose framing is
// damaged should write to the Indexer separately and look at Close's error
// when the download ends.
type Indexer struct {
	// constants
	max int64

	// mutable state; an Indexer is not safe for concurrent use
	state  indexerState
	off    int64 // stream offset of the next byte
	recOff int64 // offset of the current record's header
	hdr    [HeaderLen]byte
	hn     int // header bytes gathered
	remain uint64
	crc    uint32 // unmasked CRC32C of the data seen so far
	ftr    [FooterLen]byte
	fn     int // footer bytes gathered
	spans  []Span
	err    error
	closed bool
}

type indexerState uint8

const (
	inHeader indexerState = iota
	inData
	inFooter
)

// NewIndexer returns an Indexer that rejects records longer than maxRecord
// bytes (1 GiB when maxRecord <= 0).
func NewIndexer(maxRecord int64) *Indexer {
	if maxRecord <= 0 {
		maxRecord = defaultMaxRecord
	}
	return &Indexer{max: maxRecord}
}

var errWriteAfterClose = errors.New("tfrecord: write to closed Indexer")

// Write consumes the next bytes of the file. It returns a *CorruptError as
// soon as a header or data CRC does not match or a length exceeds the limit.
func (x *Indexer) Write(p []byte) (int, error) {
	if x.err != nil {
		return 0, x.err
	}
	if x.closed {
		return 0, errWriteAfterClose
	}
	total := len(p)
	for len(p) > 0 {
		switch x.state {
		case inHeader:
			if x.hn == 0 {
				x.recOff = x.off
			}
			c := copy(x.hdr[x.hn:], p)
			x.hn += c
			x.off += int64(c)
			p = p[c:]
			if x.hn < HeaderLen {
				continue
			}
			n, ok := parseHeader(x.hdr[:])
			if !ok {
				return x.fail(total-len(p), corrupt(x.recOff, len(x.spans), reasonLengthCRC))
			}
			if n > uint64(x.max) {
				return x.fail(total-len(p), tooLong(x.recOff, len(x.spans), n, x.max))
			}
			x.remain, x.crc, x.state = n, 0, inData
			if n == 0 {
				x.state = inFooter
			}
		case inData:
			c := len(p)
			if uint64(c) > x.remain {
				c = int(x.remain)
			}
			x.crc = crc32.Update(x.crc, castagnoli, p[:c])
			x.remain -= uint64(c)
			x.off += int64(c)
			p = p[c:]
			if x.remain == 0 {
				x.state = inFooter
			}
		case inFooter:
			c := copy(x.ftr[x.fn:], p)
			x.fn += c
			x.off += int64(c)
			p = p[c:]
			if x.fn < FooterLen {
				continue
			}
			if binary.LittleEndian.Uint32(x.ftr[:]) != mask(x.crc) {
				return x.fail(total-len(p), corrupt(x.recOff, len(x.spans), reasonDataCRC))
			}
			x.spans = append(x.spans, Span{Offset: x.recOff, Len: x.off - x.recOff - overhead})
			x.hn, x.fn, x.state = 0, 0, inHeader
		}
	}
	return total, nil
}

func (x *Indexer) fail(n int, err error) (int, error) {
	x.err = err
	return n, err
}

// Close reports whether the stream ended on a record boundary with every
// record intact. It returns the first corruption Write found, or a
// *CorruptError ("truncated record") naming the record the stream ended in.
func (x *Indexer) Close() error {
	if x.err != nil {
		return x.err
	}
	x.closed = true
	if x.state != inHeader || x.hn != 0 {
		x.err = corrupt(x.recOff, len(x.spans), reasonTruncated)
	}
	return x.err
}

// Spans returns every record's span once Close has returned nil, and nil
// before that or after an error.
func (x *Indexer) Spans() []Span {
	if !x.closed || x.err != nil {
		return nil
	}
	return x.spans
}

// Scanner iterates over the records of a stream in order, verifying both
// CRCs of each. It reads through a 64 KiB buffer and reuses one record
// buffer, grown to the largest record seen.
//
//	sc := tfrecord.NewScanner(r, 0)
//	for sc.Next() {
//		use(sc.Record())
//	}
//	if err := sc.Err(); err != nil { ... }
type Scanner struct {
	// dependencies and constants
	r   *bufio.Reader
	max int64

	// mutable state; a Scanner is not safe for concurrent use
	off  int64 // stream offset of the next record's header
	idx  int   // number of the next record
	hdr  [HeaderLen]byte
	buf  []byte
	rec  []byte
	span Span
	err  error
	done bool
}

// NewScanner returns a Scanner over r that rejects records longer than
// maxRecord bytes (1 GiB when maxRecord <= 0) before allocating for them.
func NewScanner(r io.Reader, maxRecord int64) *Scanner {
	if maxRecord <= 0 {
		maxRecord = defaultMaxRecord
	}
	return &Scanner{r: bufio.NewReaderSize(r, 64<<10), max: maxRecord}
}

// Next advances to the next record. It returns false at the end of the
// stream or on the first error; Err tells which.
func (s *Scanner) Next() bool {
	if s.err != nil || s.done {
		return false
	}
	s.rec = nil
	if _, err := io.ReadFull(s.r, s.hdr[:]); err != nil {
		if errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			s.done = true // clean end between records
			return false
		}
		return s.fail(err)
	}
	n, ok := parseHeader(s.hdr[:])
	if !ok {
		return s.fail(corrupt(s.off, s.idx, reasonLengthCRC))
	}
	if n > uint64(s.max) {
		return s.fail(tooLong(s.off, s.idx, n, s.max))
	}
	need := int(n) + FooterLen
	if cap(s.buf) < need {
		s.buf = make([]byte, need)
	}
	buf := s.buf[:need]
	// Chunked for the reason given in ReadRecord.
	crc := uint32(0)
	for off := 0; off < need; off += readChunk {
		chunk := buf[off:min(off+readChunk, need)]
		if _, err := io.ReadFull(s.r, chunk); err != nil {
			return s.fail(err)
		}
		if d := min(len(chunk), int(n)-off); d > 0 {
			crc = crc32.Update(crc, castagnoli, chunk[:d])
		}
	}
	data := buf[:n]
	if binary.LittleEndian.Uint32(buf[n:]) != mask(crc) {
		return s.fail(corrupt(s.off, s.idx, reasonDataCRC))
	}
	s.rec = data
	s.span = Span{Offset: s.off, Len: int64(n)}
	s.off += overhead + int64(n)
	s.idx++
	return true
}

// fail records err, turning a short read into a truncated-record error.
func (s *Scanner) fail(err error) bool {
	switch {
	case errors.Is(err, ErrCorrupt):
		s.err = err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		s.err = corrupt(s.off, s.idx, reasonTruncated)
	default:
		s.err = fmt.Errorf("tfrecord: record %d at offset %d: %w", s.idx, s.off, err)
	}
	s.rec = nil
	return false
}

// Record returns the current record's payload. It is valid until the next
// call to Next and must not be modified.
func (s *Scanner) Record() []byte { return s.rec }

// Span returns the current record's span in the stream.
func (s *Scanner) Span() Span { return s.span }

// Err returns the error that stopped Next, or nil at a clean end of stream.
func (s *Scanner) Err() error { return s.err }
