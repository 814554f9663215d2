package lerobot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// The parquet library decodes Thrift by allocating what a length read
// from the file asks for before it knows the bytes are there: one flipped
// byte in a page header can ask for gigabytes. The guard walks the same
// Thrift first, without decoding it, and refuses any length that the bytes
// it walks cannot hold, so that the library only ever sees metadata whose
// lengths are backed by bytes of the file.
const (
	// maxFooter bounds the footer (FileMetaData): LeRobot's are a few KiB.
	maxFooter = 64 << 20
	// footerProbe is how much of a file's end the guard reads at once,
	// hoping to hold the whole footer.
	footerProbe = 64 << 10
	// maxThriftDepth bounds the nesting of Thrift structs and containers.
	maxThriftDepth = 64
	// maxPageHeader bounds one page header (with its statistics).
	maxPageHeader = 1 << 20
	// maxPageSize bounds a page's uncompressed size, which sizes the
	// decompression buffer; LeRobot's pages are about 1 MiB.
	maxPageSize = 256 << 20
	// maxPageValues bounds a page's value count, which sizes its level,
	// offset and value buffers (up to about 14 bytes a value: 56 MiB).
	// Writers cut pages at about 1 MiB, far fewer values.
	maxPageValues = 1 << 22
	// chunkWindow is how much of a column chunk's start the guard reads at
	// once and keeps for the library, which reads a chunk through a buffer
	// of the same size (parquet.ReadBufferSize in openTable).
	chunkWindow = 1 << 20
	// chunkWhole is the largest chunk the guard reads whole, to check its
	// pages' data and keep it for the library.
	chunkWhole = 16 << 20
	// headerWindow is the first read for a page header past chunkWindow.
	headerWindow = 64 << 10
)

// errThriftShort is a Thrift value that runs past the bytes given; for a
// page header it means "read more", anywhere else the value is damaged.
var errThriftShort = errors.New("thrift value runs past its bytes")

// guard checks a parquet file's metadata before the parquet library
// decodes it, and serves the library the bytes it read.
type guard struct {
	// dependencies
	name string
	r    io.ReaderAt
	mem  []byte // the whole file, when r is one in memory
	// constants
	size    int64
	dataEnd int64 // where the column chunks end and the footer starts, once footer has run
	// mutable state
	mu      sync.Mutex
	off     int64           // guarded by mu
	cached  []byte          // guarded by mu: the file's bytes at off
	checked map[[2]int]bool // guarded by mu: row group, column chunks walked
}

func newGuard(name string, r io.ReaderAt, size int64) *guard {
	g := &guard{name: name, r: r, size: size, checked: map[[2]int]bool{}}
	if b, ok := r.(bytesReaderAt); ok && int64(len(b)) == size {
		g.mem = b
	}
	return g
}

// ReadAt reads the file, from the bytes the guard last read where they
// hold the start of p.
func (g *guard) ReadAt(p []byte, off int64) (int, error) {
	g.mu.Lock()
	n := 0
	if off >= g.off && off < g.off+int64(len(g.cached)) {
		n = copy(p, g.cached[off-g.off:])
	}
	g.mu.Unlock()
	if n == len(p) {
		return n, nil
	}
	m, err := g.r.ReadAt(p[n:], off+int64(n))
	return n + m, err
}

// reader is what the library reads the file through.
func (g *guard) reader() io.ReaderAt {
	if g.mem != nil {
		return g.r
	}
	return g
}

// read returns n bytes at off, which the caller must not modify; keep
// makes the guard serve them to the library. A file in memory, or bytes
// the guard holds already, are sliced, not copied.
func (g *guard) read(off, n int64, keep bool) ([]byte, error) {
	if off < 0 || n < 0 || off > g.size-n {
		return nil, g.errorf("%d bytes at %d lie outside its %d bytes", n, off, g.size)
	}
	if g.mem != nil {
		return g.mem[off : off+n : off+n], nil
	}
	g.mu.Lock()
	c, at := g.cached, g.off
	g.mu.Unlock()
	if off >= at && off+n <= at+int64(len(c)) {
		return c[off-at : off-at+n : off-at+n], nil // a small file, read whole
	}
	b := make([]byte, n)
	if m, err := g.r.ReadAt(b, off); m < len(b) {
		return nil, fmt.Errorf("%s: %d bytes at %d: %w", g.name, n, off, err)
	}
	if keep {
		g.mu.Lock()
		g.off, g.cached = off, b
		g.mu.Unlock()
	}
	return b, nil
}

func (g *guard) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", g.name, ErrParquet, fmt.Sprintf(format, args...))
}

// footer checks the file's magic and that its footer is well-formed
// Thrift whose every length fits in the footer. The leading magic of a
// file larger than footerProbe is left to the library, which checks it
// before decoding anything.
func (g *guard) footer() error {
	if g.size < 12 {
		return g.errorf("%d bytes is too short for a parquet file", g.size)
	}
	probe := min(g.size, footerProbe)
	tail, err := g.read(g.size-probe, probe, true)
	if err != nil {
		return err
	}
	end := tail[len(tail)-8:]
	if string(end[4:]) != "PAR1" {
		return g.errorf("ends in %q, not PAR1", end[4:])
	}
	if probe == g.size && string(tail[:4]) != "PAR1" {
		return g.errorf("starts with %q, not PAR1", tail[:4])
	}
	n := int64(binary.LittleEndian.Uint32(end))
	if n > maxFooter || n > g.size-12 {
		return g.errorf("footer of %d bytes in a file of %d (at most %d)", n, g.size, min(int64(maxFooter), g.size-12))
	}
	g.dataEnd = g.size - 8 - n
	meta := tail[max(0, int64(len(tail))-8-n) : len(tail)-8]
	if int64(len(meta)) < n {
		b, err := g.read(g.size-8-n, n+8, true)
		if err != nil {
			return err
		}
		meta = b[:n]
	}
	w := thriftWalker{b: meta}
	if err := w.skipStruct(0); err != nil {
		return g.errorf("footer: %v at byte %d", err, w.pos)
	}
	if w.pos != len(meta) {
		return g.errorf("footer: %d bytes after the file metadata", len(meta)-w.pos)
	}
	return nil
}

// guard checks the page headers and pages of the column's chunk in a row
// group before they are read. A chunk the footer does not list is left to
// the library to report.
func (c *column) guard(rowGroup int) error {
	groups := c.t.f.Metadata().RowGroups
	if rowGroup >= len(groups) || c.leaf.ColumnIndex >= len(groups[rowGroup].Columns) {
		return nil
	}
	m := &groups[rowGroup].Columns[c.leaf.ColumnIndex].MetaData
	start := m.DataPageOffset // where the library starts reading, as it does
	if m.DictionaryPageOffset != 0 {
		start = m.DictionaryPageOffset
	}
	if m.TotalCompressedSize < 0 || start > math.MaxInt64-m.TotalCompressedSize {
		return c.t.g.errorf("row group %d column %s: chunk of %d bytes at %d", rowGroup, c.name, m.TotalCompressedSize, start)
	}
	typ := c.leaf.Node.Type()
	return c.t.g.chunk(rowGroup, c.leaf.ColumnIndex, chunkRange{
		start: start, end: start + m.TotalCompressedSize, values: m.NumValues, codec: m.Codec,
		col: pageColumn{kind: typ.Kind(), size: typ.Length(), maxRep: c.leaf.MaxRepetitionLevel, maxDef: c.leaf.MaxDefinitionLevel},
	})
}

// chunkRange is a column chunk's bytes, value count and codec, as the
// footer gives them, and what the schema says of its values.
type chunkRange struct {
	start, end, values int64
	codec              format.CompressionCodec
	col                pageColumn
}

// chunk checks a column chunk before the library reads it: each page
// header is well-formed Thrift, its page lies in the chunk, its sizes and
// value count are bounded, the last page ends at the chunk's end, and
// each page's data (see page) asks the library for no more memory than the
// page holds. A chunk is walked once per table.
func (g *guard) chunk(rowGroup, col int, c chunkRange) error {
	key := [2]int{rowGroup, col}
	g.mu.Lock()
	done := g.checked[key]
	g.mu.Unlock()
	if done {
		return nil
	}
	if c.start < 4 || c.end < c.start || c.end > g.dataEnd {
		return g.errorf("row group %d column %d: chunk [%d, %d) outside the data [4, %d)", rowGroup, col, c.start, c.end, g.dataEnd)
	}
	// The guard reads the pages' data too: a chunk up to chunkWhole is read
	// once and kept for the library; a larger one page by page.
	winOff := c.start
	n := min(c.end-c.start, chunkWindow)
	if c.end-c.start <= chunkWhole {
		n = c.end - c.start
	}
	win, err := g.read(c.start, n, true)
	if err != nil {
		return err
	}
	var p pageChecker
	for pos := c.start; pos < c.end; {
		var h pageHeader
		want := int64(headerWindow)
		for {
			if pos >= winOff && pos < winOff+int64(len(win)) {
				h, err = readPageHeader(win[pos-winOff:])
				if !errors.Is(err, errThriftShort) || winOff+int64(len(win)) == c.end {
					break
				}
			}
			if want > maxPageHeader {
				return g.errorf("row group %d column %d: page header at %d longer than %d bytes", rowGroup, col, pos, maxPageHeader)
			}
			winOff = pos
			if win, err = g.read(pos, min(c.end-pos, want), false); err != nil {
				return err
			}
			want *= 2
		}
		if err != nil {
			return g.errorf("row group %d column %d: page header at %d: %v", rowGroup, col, pos, err)
		}
		switch {
		case h.compressed < 0 || h.compressed > c.end-pos-h.length:
			return g.errorf("row group %d column %d: page at %d of %d bytes overruns its chunk [%d, %d)", rowGroup, col, pos, h.compressed, c.start, c.end)
		case h.uncompressed < 0 || h.uncompressed > maxPageSize:
			return g.errorf("row group %d column %d: page at %d of %d bytes uncompressed (at most %d)", rowGroup, col, pos, h.uncompressed, maxPageSize)
		case h.values < 0 || h.values > maxPageValues || (h.values > c.values && h.typ != dictionaryPage):
			return g.errorf("row group %d column %d: page at %d holds %d values, its chunk %d", rowGroup, col, pos, h.values, c.values)
		case h.typ == dictionaryPage && h.values > 8*h.uncompressed+8:
			return g.errorf("row group %d column %d: dictionary of %d values in %d bytes", rowGroup, col, h.values, h.uncompressed)
		}
		data := pos + h.length
		var body []byte
		if data >= winOff && data+h.compressed <= winOff+int64(len(win)) {
			body = win[data-winOff : data-winOff+h.compressed]
		} else if body, err = g.read(data, h.compressed, false); err != nil {
			return err
		}
		if err := p.page(c, h, body); err != nil {
			return g.errorf("row group %d column %d: page at %d: %v", rowGroup, col, pos, err)
		}
		pos = data + h.compressed
	}
	g.mu.Lock()
	g.checked[key] = true
	g.mu.Unlock()
	return nil
}

// The library decodes a page's levels and values by run lengths and counts
// read from the page's data, allocating what they ask for before it knows
// the bytes are there (an RLE run of 2^31 values allocates 8 GiB), and it
// decompresses into a buffer sized by the codec's own length fields. The
// guard decompresses each page itself, bounded by the header's
// uncompressed size, and walks every run length and count the library will
// decode, refusing any that the page's values or bytes cannot hold.

// maxDecoded bounds what a page's DELTA_BYTE_ARRAY values decode to.
const maxDecoded = 64 << 20

// Encoding values.
const (
	encPlain              = 0
	encPlainDictionary    = 2
	encRLE                = 3
	encBitPacked          = 4
	encDeltaBinaryPacked  = 5
	encDeltaLengthByteArr = 6
	encDeltaByteArray     = 7
	encRLEDictionary      = 8
	encByteStreamSplit    = 9
)

// pageColumn is what the guard needs of a leaf column's schema.
type pageColumn struct {
	kind           parquet.Kind
	size           int // of a fixed-length byte array
	maxRep, maxDef int
}

// pageChecker checks the pages of one chunk, reusing its buffers.
type pageChecker struct {
	buf  []byte
	gzip *gzip.Reader
}

var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(maxPageSize), zstd.WithDecodeAllCapLimit(true))
})

// zstdMu serializes the guard's zstd decodes: one decoder's memory, not
// one per reader.
var zstdMu sync.Mutex

// page checks one page's data, as the library would decode it.
func (p *pageChecker) page(c chunkRange, h pageHeader, body []byte) error {
	n := h.values
	switch h.typ {
	case dictionaryPage:
		if h.encoding != encPlain && h.encoding != encPlainDictionary {
			return fmt.Errorf("dictionary encoded %s", format.Encoding(h.encoding))
		}
		raw, err := p.decompress(c.codec, body, h.uncompressed)
		if err != nil {
			return err
		}
		return plainValues(c.col, raw, n)
	case dataPage:
		raw, err := p.decompress(c.codec, body, h.uncompressed)
		if err != nil {
			return err
		}
		if c.col.maxRep > 0 {
			if raw, err = levelsV1("repetition", raw, h.repEnc, c.col.maxRep, n); err != nil {
				return err
			}
		}
		if c.col.maxDef > 0 {
			if raw, err = levelsV1("definition", raw, h.defEnc, c.col.maxDef, n); err != nil {
				return err
			}
		}
		return values(c.col, h.encoding, raw, n)
	case dataPageV2:
		switch {
		case h.nulls < 0 || h.nulls > n:
			return fmt.Errorf("%d nulls of %d values", h.nulls, n)
		case h.repLen < 0 || h.defLen < 0 || h.repLen+h.defLen > int64(len(body)) || h.repLen+h.defLen > h.uncompressed:
			return fmt.Errorf("levels of %d and %d bytes in a page of %d (%d uncompressed)", h.repLen, h.defLen, len(body), h.uncompressed)
		}
		if c.col.maxRep > 0 {
			if err := hybrid("repetition levels", body[:h.repLen], bitWidth(c.col.maxRep), n); err != nil {
				return err
			}
		}
		if c.col.maxDef > 0 {
			if err := hybrid("definition levels", body[h.repLen:h.repLen+h.defLen], bitWidth(c.col.maxDef), n); err != nil {
				return err
			}
		}
		raw := body[h.repLen+h.defLen:]
		if !h.v2Plain {
			var err error
			if raw, err = p.decompress(c.codec, raw, h.uncompressed-h.repLen-h.defLen); err != nil {
				return err
			}
		}
		return values(c.col, h.encoding, raw, n-h.nulls)
	}
	return nil // the library refuses other pages
}

// decompress decompresses a page's data as the library will, checking
// that it comes to exactly size bytes without decoding more.
func (p *pageChecker) decompress(codec format.CompressionCodec, src []byte, size int64) ([]byte, error) {
	if codec == format.Uncompressed {
		return src, nil // the library reads it in place, whatever size says
	}
	if int64(cap(p.buf)) < size+1 {
		p.buf = make([]byte, size+1)
	}
	dst := p.buf[:size]
	var n int
	var err error
	switch codec {
	case format.Snappy:
		// The library's snappy allocates the length its data starts with.
		var m int
		if m, err = snappy.DecodedLen(src); err == nil && int64(m) != size {
			return nil, fmt.Errorf("snappy data of %d bytes for a page of %d", m, size)
		}
		if err == nil {
			var out []byte
			out, err = snappy.Decode(dst, src)
			n = len(out)
		}
	case format.Zstd:
		d, derr := zstdDecoder()
		if derr != nil {
			return nil, derr
		}
		zstdMu.Lock()
		out, zerr := d.DecodeAll(src, dst[:0:size]) // no more than size, by WithDecodeAllCapLimit
		zstdMu.Unlock()
		n, err = len(out), zerr
	case format.Gzip:
		if p.gzip == nil {
			p.gzip, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = p.gzip.Reset(bytes.NewReader(src))
		}
		if err == nil {
			n, err = io.ReadFull(p.gzip, p.buf[:size+1])
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				err = nil
			}
		}
	case format.Lz4Raw:
		n, err = lz4.UncompressBlock(src, dst)
	default:
		return nil, fmt.Errorf("%s compression is not supported", codec)
	}
	if err != nil {
		return nil, fmt.Errorf("%s data: %v", codec, err)
	}
	if int64(n) != size {
		return nil, fmt.Errorf("%s data of %d bytes for a page of %d", codec, n, size)
	}
	return dst, nil
}

func bitWidth(maxLevel int) int { return bits.Len(uint(maxLevel)) }

// levelsV1 checks a v1 page's levels, a 4-byte length and then the levels,
// returning the bytes after them.
func levelsV1(what string, b []byte, enc int64, maxLevel int, n int64) ([]byte, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%s levels: %d bytes", what, len(b))
	}
	m := binary.LittleEndian.Uint32(b)
	if uint64(m) > uint64(len(b)-4) {
		return nil, fmt.Errorf("%s levels of %d bytes in %d", what, m, len(b)-4)
	}
	levels, rest := b[4:4+m], b[4+m:]
	switch enc {
	case encRLE:
		return rest, hybrid(what+" levels", levels, bitWidth(maxLevel), n)
	case encBitPacked:
		return rest, nil // the library decodes as many as the bytes hold
	}
	return nil, fmt.Errorf("%s levels encoded %s", what, format.Encoding(enc))
}

// values checks a data page's values, of which there are at most n.
func values(col pageColumn, enc int64, b []byte, n int64) error {
	switch enc {
	case encPlain:
		return plainValues(col, b, n)
	case encPlainDictionary, encRLEDictionary:
		if len(b) == 0 {
			return nil
		}
		if b[0] > 32 {
			return fmt.Errorf("dictionary indices of %d bits", b[0])
		}
		return hybrid("dictionary indices", b[1:], int(b[0]), n)
	case encRLE:
		if col.kind != parquet.Boolean {
			return fmt.Errorf("%s values encoded RLE", col.kind)
		}
		if len(b) == 4 {
			return nil
		}
		_, err := levelsV1("boolean", b, encRLE, 1, n)
		return err
	case encDeltaBinaryPacked:
		if col.kind != parquet.Int32 && col.kind != parquet.Int64 {
			return fmt.Errorf("%s values encoded %s", col.kind, format.Encoding(enc))
		}
		_, err := deltaPacked(b, n, col.kind == parquet.Int64, nil)
		return err
	case encDeltaLengthByteArr:
		var sum int64
		rest, err := deltaPacked(b, n, false, func(v int64) error {
			if v < 0 {
				return fmt.Errorf("value of %d bytes", v)
			}
			sum += v
			return nil
		})
		if err == nil && sum > int64(len(rest)) {
			err = fmt.Errorf("values of %d bytes in %d", sum, len(rest))
		}
		return err
	case encDeltaByteArray:
		var prefixes []int64
		rest, err := deltaPacked(b, n, false, func(v int64) error {
			prefixes = append(prefixes, v)
			return nil
		})
		if err != nil {
			return fmt.Errorf("prefix lengths: %v", err)
		}
		var i, last, sum, total int64
		rest, err = deltaPacked(rest, int64(len(prefixes)), false, func(v int64) error {
			pre := prefixes[i]
			i++
			if v < 0 || pre < 0 || pre > last {
				return fmt.Errorf("value %d: prefix of %d bytes (of %d) and suffix of %d", i-1, pre, last, v)
			}
			last = pre + v
			sum += v
			total += last
			if total > maxDecoded {
				return fmt.Errorf("values of more than %d bytes", maxDecoded)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("suffix lengths: %v", err)
		}
		if i != int64(len(prefixes)) || sum > int64(len(rest)) {
			return fmt.Errorf("%d suffixes of %d bytes for %d prefixes in %d bytes", i, sum, len(prefixes), len(rest))
		}
		return nil
	case encByteStreamSplit:
		return nil // the library decodes as many as the bytes hold
	}
	return fmt.Errorf("values encoded %s", format.Encoding(enc))
}

// plainValues checks PLAIN values: a byte array's lengths lie in the
// bytes.
func plainValues(col pageColumn, b []byte, n int64) error {
	if col.kind != parquet.ByteArray {
		return nil // the library checks fixed sizes against the bytes
	}
	for i := int64(0); len(b) > 0; i++ {
		if len(b) < 4 {
			return fmt.Errorf("value %d: %d bytes left for its length", i, len(b))
		}
		m := binary.LittleEndian.Uint32(b)
		if uint64(m) > uint64(len(b)-4) {
			return fmt.Errorf("value %d of %d bytes in %d", i, m, len(b)-4)
		}
		b = b[4+m:]
	}
	return nil
}

// hybrid walks RLE/bit-packed hybrid runs of width-bit values, of which
// the page holds n: an RLE run may hold no more values than are left, a
// bit-packed run of groups of 8 no more than are left rounded up to 8, and
// each run's bytes must be there.
func hybrid(what string, b []byte, width int, n int64) error {
	if width > 32 {
		return fmt.Errorf("%s of %d bits", what, width)
	}
	var got int64 // values so far
	limit := (n + 7) &^ 7
	for len(b) > 0 {
		u, k := binary.Uvarint(b)
		if k <= 0 {
			return fmt.Errorf("%s: run header after %d values is not a varint", what, got)
		}
		b = b[k:]
		count := u >> 1
		if count == 0 {
			continue // the library skips it, value and all
		}
		if u&1 == 1 { // count groups of 8 values
			if count > uint64(limit-got)/8 {
				return fmt.Errorf("%s: bit-packed run of %d values after %d of %d", what, 8*count, got, n)
			}
			m := count * uint64(width)
			if m > uint64(len(b)) {
				return fmt.Errorf("%s: bit-packed run of %d bytes in %d", what, m, len(b))
			}
			got += 8 * int64(count)
			b = b[m:]
			continue
		}
		if got > n || count > uint64(n-got) {
			return fmt.Errorf("%s: run of %d values after %d of %d", what, count, got, n)
		}
		m := (width + 7) / 8
		if m > len(b) {
			return fmt.Errorf("%s: run value of %d bytes in %d", what, m, len(b))
		}
		got += int64(count)
		b = b[m:]
	}
	return nil
}

// deltaPacked walks DELTA_BINARY_PACKED integers, at most n of them,
// offering each to visit when it is not nil, and returns the bytes after
// them. wide is for 64-bit integers; others wrap at 32 bits as the
// library's do.
func deltaPacked(b []byte, n int64, wide bool, visit func(int64) error) ([]byte, error) {
	w := thriftWalker{b: b}
	var head [4]uint64
	for i := range head {
		u, err := w.uvarint()
		if err != nil {
			return nil, fmt.Errorf("delta header: %v", err)
		}
		head[i] = u
	}
	blockSize, miniBlocks, total := head[0], head[1], head[2]
	first := int64(head[3]>>1) ^ -int64(head[3]&1)
	switch {
	case blockSize == 0 || blockSize%128 != 0 || blockSize > 65536 || miniBlocks == 0 || miniBlocks > blockSize || (blockSize/miniBlocks)%32 != 0:
		return nil, fmt.Errorf("delta blocks of %d values in %d miniblocks", blockSize, miniBlocks)
	case total > uint64(n):
		return nil, fmt.Errorf("%d delta values for %d", total, n)
	case total == 0:
		return b[w.pos:], nil
	}
	maxWidth := 32
	if wide {
		maxWidth = 64
	}
	last := first
	if !wide {
		last = int64(int32(first))
	}
	if visit != nil {
		if err := visit(last); err != nil {
			return nil, err
		}
	}
	per := int64(blockSize / miniBlocks)
	for left := int64(total) - 1; left > 0; {
		u, err := w.uvarint()
		if err != nil {
			return nil, fmt.Errorf("delta block: %v", err)
		}
		minDelta := int64(u>>1) ^ -int64(u&1)
		if uint64(w.left()) < miniBlocks {
			return nil, fmt.Errorf("delta block of %d miniblocks in %d bytes", miniBlocks, w.left())
		}
		widths := w.b[w.pos : w.pos+int(miniBlocks)]
		w.pos += int(miniBlocks)
		for _, width := range widths {
			if left == 0 {
				break
			}
			if int(width) > maxWidth {
				return nil, fmt.Errorf("delta miniblock of %d bits", width)
			}
			m := min(int(per)*int(width)/8, w.left())
			data := w.b[w.pos : w.pos+m]
			w.pos += m
			k := min(per, left)
			if visit != nil {
				for j := range k {
					last += minDelta + int64(unpack(data, j*int64(width), int(width)))
					if !wide {
						last = int64(int32(last))
					}
					if err := visit(last); err != nil {
						return nil, err
					}
				}
			}
			left -= k
		}
	}
	return b[w.pos:], nil
}

// unpack reads width bits at bit off of b, least significant first; bits
// past b's end read as zero.
func unpack(b []byte, off int64, width int) uint64 {
	var v uint64
	for i := 0; i < width; {
		at := off + int64(i)
		if at>>3 >= int64(len(b)) {
			break
		}
		bit := int(at & 7)
		take := min(8-bit, width-i)
		v |= uint64(b[at>>3]>>bit) & (1<<take - 1) << i
		i += take
	}
	return v
}

// PageType values.
const (
	dataPage       = 0
	dictionaryPage = 2
	dataPageV2     = 3
)

// pageHeader is what the guard needs of a PageHeader.
type pageHeader struct {
	length                   int64 // of the header itself
	typ                      int64
	uncompressed, compressed int64
	values                   int64 // num_values of its data or dictionary header
	// of the header that its type names (data_page_header,
	// dictionary_page_header or data_page_header_v2):
	encoding       int64
	defEnc, repEnc int64 // v1
	nulls          int64 // v2
	defLen, repLen int64 // v2
	v2Plain        bool  // v2: is_compressed is false
}

// readPageHeader walks the PageHeader at the start of b.
func readPageHeader(b []byte) (pageHeader, error) {
	var h pageHeader
	var seen int        // bit i: field i, of the required 1 to 3
	var sub [9][8]int64 // fields 1 to 7 of the struct in field 5, 7 or 8
	var plain [9]bool   // its field 7 (v2's is_compressed) is false
	w := thriftWalker{b: b}
	err := w.fields(0, func(id int16, typ byte) (bool, error) {
		switch {
		case typ == typeI32 && id >= 1 && id <= 3:
			seen |= 1 << id
			v, err := w.i32()
			switch id {
			case 1:
				h.typ = v
			case 2:
				h.uncompressed = v
			case 3:
				h.compressed = v
			}
			return true, err
		case typ == typeStruct && (id == 5 || id == 7 || id == 8):
			// data_page_header, dictionary_page_header, data_page_header_v2:
			// num_values is field 1 of each.
			s := id
			return true, w.fields(1, func(id int16, typ byte) (bool, error) {
				if id == 7 && (typ == typeTrue || typ == typeFalse) {
					plain[s] = typ == typeFalse
				}
				if id < 1 || id > 7 || typ != typeI32 {
					return false, nil
				}
				v, err := w.i32()
				sub[s][id] = v
				if id == 1 {
					h.values = max(h.values, v)
				}
				return true, err
			})
		}
		return false, nil
	})
	h.length = int64(w.pos)
	if err == nil && seen != 0b1110 {
		err = errors.New("page header lacks its type or sizes")
	}
	switch h.typ {
	case dataPage:
		f := sub[5]
		h.encoding, h.defEnc, h.repEnc = f[2], f[3], f[4]
	case dictionaryPage:
		h.encoding = sub[7][2]
	case dataPageV2:
		f := sub[8]
		h.nulls, h.encoding, h.defLen, h.repLen, h.v2Plain = f[2], f[4], f[5], f[6], plain[8]
	}
	return h, err
}

// Thrift compact protocol types.
const (
	typeStop   = 0
	typeTrue   = 1
	typeFalse  = 2
	typeByte   = 3
	typeI16    = 4
	typeI32    = 5
	typeI64    = 6
	typeDouble = 7
	typeBinary = 8
	typeList   = 9
	typeSet    = 10
	typeMap    = 11
	typeStruct = 12
	typeUUID   = 13
)

// thriftWalker skips Thrift compact protocol values in b, checking that
// every length and count fits in the bytes left.
type thriftWalker struct {
	b   []byte
	pos int
}

func (w *thriftWalker) left() int { return len(w.b) - w.pos }

func (w *thriftWalker) byte() (byte, error) {
	if w.pos >= len(w.b) {
		return 0, errThriftShort
	}
	w.pos++
	return w.b[w.pos-1], nil
}

func (w *thriftWalker) skip(n int) error {
	if n > w.left() {
		return errThriftShort
	}
	w.pos += n
	return nil
}

// uvarint reads an unsigned LEB128 varint of at most 64 bits.
func (w *thriftWalker) uvarint() (uint64, error) {
	var x uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		c, err := w.byte()
		if err != nil {
			return 0, err
		}
		if i == binary.MaxVarintLen64-1 && c > 1 {
			return 0, errors.New("varint overflows 64 bits")
		}
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return x, nil
		}
	}
	return 0, errors.New("varint overflows 64 bits")
}

// varint reads a zigzag varint that must lie in [lo, hi].
func (w *thriftWalker) varint(lo, hi int64) (int64, error) {
	u, err := w.uvarint()
	if err != nil {
		return 0, err
	}
	v := int64(u>>1) ^ -int64(u&1)
	if v < lo || v > hi {
		return 0, fmt.Errorf("integer %d outside [%d, %d]", v, lo, hi)
	}
	return v, nil
}

func (w *thriftWalker) i32() (int64, error) { return w.varint(-1<<31, 1<<31-1) }

// size reads a length or count that must fit in the bytes left, each
// item taking at least per bytes.
func (w *thriftWalker) size(what string, per int) (int, error) {
	u, err := w.uvarint()
	if err != nil {
		return 0, err
	}
	return w.fits(what, u, per)
}

func (w *thriftWalker) fits(what string, n uint64, per int) (int, error) {
	if n > uint64(w.left()/per) {
		return 0, fmt.Errorf("%s of %d in %d bytes", what, n, w.left())
	}
	return int(n), nil
}

// skipStruct skips a struct's fields up to its stop field.
func (w *thriftWalker) skipStruct(depth int) error {
	return w.fields(depth, func(int16, byte) (bool, error) { return false, nil })
}

// fields walks a struct's fields up to its stop field, offering each to
// visit, which reads the value and says so, or leaves it to be skipped.
func (w *thriftWalker) fields(depth int, visit func(id int16, typ byte) (bool, error)) error {
	if depth > maxThriftDepth {
		return fmt.Errorf("nested deeper than %d", maxThriftDepth)
	}
	var id int64
	for {
		b, err := w.byte()
		if err != nil {
			return err
		}
		if b == typeStop {
			return nil
		}
		typ := b & 0x0f
		if delta := b >> 4; delta != 0 {
			id += int64(delta)
		} else if id, err = w.varint(-1<<15, 1<<15-1); err != nil {
			return err
		}
		done, err := visit(int16(id), typ)
		if typ == typeTrue || typ == typeFalse {
			if err != nil {
				return err
			}
			continue // a bool field's value is its type
		}
		if err != nil {
			return err
		}
		if !done {
			if err := w.skipValue(typ, depth+1); err != nil {
				return err
			}
		}
	}
}

// skipValue skips one value of type typ; a bool in a container takes a
// byte.
func (w *thriftWalker) skipValue(typ byte, depth int) error {
	if depth > maxThriftDepth {
		return fmt.Errorf("nested deeper than %d", maxThriftDepth)
	}
	switch typ {
	case typeTrue, typeFalse, typeByte:
		return w.skip(1)
	case typeI16, typeI32, typeI64:
		_, err := w.uvarint()
		return err
	case typeDouble:
		return w.skip(8)
	case typeUUID:
		return w.skip(16)
	case typeBinary:
		n, err := w.size("binary length", 1)
		if err != nil {
			return err
		}
		return w.skip(n)
	case typeList, typeSet:
		h, err := w.byte()
		if err != nil {
			return err
		}
		elem, n := h&0x0f, uint64(h>>4)
		if n == 15 {
			if n, err = w.uvarint(); err != nil {
				return err
			}
		}
		count, err := w.fits("list size", n, 1)
		if err != nil {
			return err
		}
		for range count {
			if err := w.skipValue(elem, depth+1); err != nil {
				return err
			}
		}
		return nil
	case typeMap:
		n, err := w.size("map size", 2)
		if err != nil || n == 0 {
			return err
		}
		kv, err := w.byte()
		if err != nil {
			return err
		}
		for range n {
			if err := w.skipValue(kv>>4, depth+1); err != nil {
				return err
			}
			if err := w.skipValue(kv&0x0f, depth+1); err != nil {
				return err
			}
		}
		return nil
	case typeStruct:
		return w.skipStruct(depth)
	}
	return fmt.Errorf("unknown thrift type %d", typ)
}
