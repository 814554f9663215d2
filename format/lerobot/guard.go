package lerobot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/parquet-go/parquet-go/format"
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
	// offset and value buffers.
	maxPageValues = 1 << 24
	// chunkWindow is how much of a column chunk's start the guard reads at
	// once and keeps for the library, which reads a chunk through a buffer
	// of the same size (parquet.ReadBufferSize in openTable).
	chunkWindow = 1 << 20
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

// guard checks the page headers of the column's chunk in a row group
// before they are read. A chunk the footer does not list is left to the
// library to report.
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
	return c.t.g.chunk(rowGroup, c.leaf.ColumnIndex, chunkRange{start: start, end: start + m.TotalCompressedSize, values: m.NumValues, snappy: m.Codec == format.Snappy})
}

// chunkRange is a column chunk's bytes and value count, as the footer
// gives them.
type chunkRange struct {
	start, end, values int64
	snappy             bool // pages are snappy-compressed
}

// chunk checks the page headers of a column chunk before the library reads
// them: each header is well-formed Thrift, its page lies in the chunk, its
// sizes and value count are bounded, and the last page ends at the
// chunk's end. A chunk is walked once per table.
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
	winOff := c.start
	win, err := g.read(c.start, min(c.end-c.start, chunkWindow), true)
	if err != nil {
		return err
	}
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
		if data := pos + h.length - winOff; c.snappy && h.typ != dataPageV2 && h.compressed > 0 && data < int64(len(win)) {
			// Snappy sizes its output by the length its data starts with.
			n, k := binary.Uvarint(win[data:min(int64(len(win)), data+h.compressed)])
			if k <= 0 || n > uint64(h.uncompressed) {
				return g.errorf("row group %d column %d: page at %d: snappy data of %d bytes for a page of %d", rowGroup, col, pos, n, h.uncompressed)
			}
		}
		pos += h.length + h.compressed
	}
	g.mu.Lock()
	g.checked[key] = true
	g.mu.Unlock()
	return nil
}

// PageType values.
const (
	dictionaryPage = 2
	dataPageV2     = 3
)

// pageHeader is what the guard needs of a PageHeader.
type pageHeader struct {
	length                   int64 // of the header itself
	typ                      int64
	uncompressed, compressed int64
	values                   int64 // num_values of its data or dictionary header
}

// readPageHeader walks the PageHeader at the start of b.
func readPageHeader(b []byte) (pageHeader, error) {
	var h pageHeader
	var seen int // bit i: field i, of the required 1 to 3
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
			return true, w.fields(1, func(id int16, typ byte) (bool, error) {
				if id != 1 || typ != typeI32 {
					return false, nil
				}
				v, err := w.i32()
				h.values = max(h.values, v)
				return true, err
			})
		}
		return false, nil
	})
	h.length = int64(w.pos)
	if err == nil && seen != 0b1110 {
		err = errors.New("page header lacks its type or sizes")
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
		if typ == typeTrue || typ == typeFalse {
			continue // a bool field's value is its type
		}
		done, err := visit(int16(id), typ)
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
