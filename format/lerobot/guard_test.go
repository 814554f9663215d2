package lerobot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// countingReaderAt is a file not in memory (the guard cannot slice it)
// that counts the bytes read from it.
type countingReaderAt struct {
	r     io.ReaderAt
	bytes atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.bytes.Add(int64(n))
	return n, err
}

// fixtureParquet lists every parquet file of the LeRobot fixtures.
func fixtureParquet(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(fixtures, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".parquet") {
			out = append(out, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 5 {
		t.Fatalf("%d parquet files under %s", len(out), fixtures)
	}
	return out
}

// readAll reads every leaf column of a table, as text, checking each of
// its chunks with the guard first.
func readAll(t *testing.T, tb *table) []string {
	t.Helper()
	var out []string
	for _, path := range tb.f.Schema().Columns() {
		c, err := tb.column(path...)
		if err != nil {
			t.Fatal(err)
		}
		err = c.scan(0, tb.rows(), func(row int64, v parquet.Value) error {
			out = append(out, fmt.Sprintf("%s %d %d %d %v", c.name, row, v.RepetitionLevel(), v.DefinitionLevel(), v))
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	return out
}

// readUnguarded reads the same as readAll with parquet-go alone.
func readUnguarded(t *testing.T, r io.ReaderAt, size int64) []string {
	t.Helper()
	f, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.ReadBufferSize(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	buf := make([]parquet.Value, 64)
	for _, path := range f.Schema().Columns() {
		leaf, _ := f.Schema().Lookup(path...)
		name := strings.Join(path, ".")
		row := int64(-1)
		for _, rg := range f.RowGroups() {
			pages := rg.ColumnChunks()[leaf.ColumnIndex].Pages()
			for {
				p, err := pages.ReadPage()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				vr := p.Values()
				for {
					n, err := vr.ReadValues(buf)
					for _, v := range buf[:n] {
						if v.RepetitionLevel() == 0 {
							row++
						}
						if leaf.MaxRepetitionLevel > 0 && v.DefinitionLevel() < leaf.MaxDefinitionLevel {
							continue
						}
						out = append(out, fmt.Sprintf("%s %d %d %d %v", name, row, v.RepetitionLevel(), v.DefinitionLevel(), v))
					}
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				parquet.Release(p)
			}
			pages.Close()
		}
	}
	return out
}

// TestGuardFixtures: every fixture parquet file passes the guard, in
// memory and through a reader, and reads value for value as parquet-go
// reads it alone; through a reader, the guard reads no chunk twice.
func TestGuardFixtures(t *testing.T) {
	for _, path := range fixtureParquet(t) {
		t.Run(strings.TrimPrefix(path, fixtures+string(filepath.Separator)), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			unguarded := &countingReaderAt{r: bytes.NewReader(b)}
			want := readUnguarded(t, unguarded, int64(len(b)))
			if len(want) == 0 {
				t.Fatal("no values")
			}
			for _, inMemory := range []bool{true, false} {
				var r io.ReaderAt = bytesReaderAt(b)
				counted := &countingReaderAt{r: bytes.NewReader(b)}
				if !inMemory {
					r = counted
				}
				tb, err := openTable(filepath.Base(path), r, int64(len(b)))
				if err != nil {
					t.Fatal(err)
				}
				got := readAll(t, tb)
				if len(got) != len(want) {
					t.Fatalf("in memory %v: %d values, parquet-go alone %d", inMemory, len(got), len(want))
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("in memory %v: value %d is %q, parquet-go alone %q", inMemory, i, got[i], want[i])
					}
				}
				if !inMemory && counted.bytes.Load() > unguarded.bytes.Load()+footerProbe {
					t.Errorf("read %d bytes through the guard, %d without it", counted.bytes.Load(), unguarded.bytes.Load())
				}
			}
		})
	}
}

// TestGuardBomb: a tasks table with one damaged page header, which made
// parquet-go allocate 226 MB, is refused as ErrParquet having allocated
// little, in memory and through a reader.
func TestGuardBomb(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "parquet_bomb.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, inMemory := range []bool{true, false} {
		var r io.ReaderAt = bytesReaderAt(b)
		if !inMemory {
			r = bytes.NewReader(b)
		}
		var err error
		alloc := allocated(func() { err = readEveryColumn(r, int64(len(b))) })
		if !errors.Is(err, ErrParquet) {
			t.Errorf("in memory %v: %v, want ErrParquet", inMemory, err)
		}
		if alloc > 16<<20 {
			t.Errorf("in memory %v: allocated %d MiB", inMemory, alloc>>20)
		}
		t.Logf("in memory %v: %v; allocated %d KiB", inMemory, err, alloc>>10)
	}
}

// allocated reports the bytes f allocates.
func allocated(f func()) uint64 {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// readEveryColumn opens a table and reads every column every way,
// returning the first error.
func readEveryColumn(r io.ReaderAt, size int64) error {
	tb, err := openTable("t.parquet", r, size)
	if err != nil {
		return err
	}
	n := min(tb.rows(), 1<<12)
	var first error
	for _, path := range tb.f.Schema().Columns() {
		c, err := tb.column(path...)
		if err != nil {
			return err
		}
		_, err1 := c.int64s(0, n)
		_, err2 := c.float64s(0, n, 2)
		_, err3 := c.bytes(0, n)
		for _, err := range []error{err1, err2, err3} {
			if first == nil && errors.Is(err, ErrParquet) {
				first = err
			}
		}
	}
	return first
}

// parquetFile wraps footer bytes as a parquet file with no data.
func parquetFile(footer []byte) []byte { return parquetFileWith(nil, footer) }

// parquetFileWith wraps data and footer bytes as a parquet file.
func parquetFileWith(data, footer []byte) []byte {
	b := append(append([]byte("PAR1"), data...), footer...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(footer)))
	return append(b, "PAR1"...)
}

// TestGuardFooter: files whose ends or footers are damaged are refused
// as ErrParquet without a large allocation; a real footer is not.
func TestGuardFooter(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(fixtures, "lerobot_h264", TasksPath))
	if err != nil {
		t.Fatal(err)
	}
	huge := func(b []byte) []byte { return append(b, 0xff, 0xff, 0xff, 0xff, 0x07) } // 2^31-1
	for _, tc := range []struct {
		name string
		file []byte
		ok   bool
	}{
		{"fixture", good, true},
		{"footer longer than the file", append(append([]byte("PAR1"), 0x15, 0, 0, 0xff, 0xff, 0, 0), "PAR1"...), false},
		{"no end magic", append(append([]byte(nil), good[:len(good)-1]...), 'X'), false},
		{"no start magic", append([]byte("PAR0"), good[4:]...), false},
		{"too short", []byte("PAR1PAR1"), false},
		{"huge binary", parquetFile(huge([]byte{0x18})), false},
		{"huge list", parquetFile(huge([]byte{0x19, 0xf8})), false},
		{"huge map", parquetFile(huge([]byte{0x1b})), false},
		{"deep nesting", parquetFile(bytes.Repeat([]byte{0x1c}, 10000)), false},
		{"unknown type", parquetFile([]byte{0x1e, 0}), false},
		{"no stop field", parquetFile([]byte{0x15, 0x02}), false},
		{"bytes after the stop field", parquetFile([]byte{0x15, 0x02, 0, 0}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGuard(tc.name, bytesReaderAt(tc.file), int64(len(tc.file)))
			var err error
			if alloc := allocated(func() { err = g.footer() }); alloc > 1<<20 {
				t.Errorf("allocated %d KiB", alloc>>10)
			}
			switch {
			case tc.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.ok && !errors.Is(err, ErrParquet):
				t.Fatalf("%v, want ErrParquet", err)
			case !tc.ok && !strings.Contains(err.Error(), tc.name):
				t.Fatalf("%q does not name the file", err)
			}
			if !tc.ok {
				if _, err := openTable(tc.name, bytesReaderAt(tc.file), int64(len(tc.file))); !errors.Is(err, ErrParquet) {
					t.Fatalf("openTable: %v, want ErrParquet", err)
				}
			}
		})
	}
}

// TestThriftWalker: the walker accepts every kind of compact-protocol
// value and stops exactly after the struct, and refuses lengths and
// counts that the bytes cannot hold.
func TestThriftWalker(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"empty struct", []byte{0}, true},
		{"bool fields", []byte{0x11, 0x12, 0}, true},
		{"byte, i16, i32, i64", []byte{0x13, 0x7f, 0x14, 0x02, 0x15, 0x80, 0x01, 0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0}, true},
		{"double", []byte{0x17, 1, 2, 3, 4, 5, 6, 7, 8, 0}, true},
		{"uuid", append(append([]byte{0x1d}, make([]byte, 16)...), 0), true},
		{"binary", []byte{0x18, 0x03, 'a', 'b', 'c', 0}, true},
		{"list of bools", []byte{0x19, 0x31, 1, 2, 1, 0}, true},
		{"long list", append(append([]byte{0x19, 0xf3, 0x10}, make([]byte, 16)...), 0), true},
		{"set of structs", []byte{0x1a, 0x2c, 0, 0x15, 0x02, 0, 0}, true},
		{"map", []byte{0x1b, 0x02, 0x85, 0x01, 'a', 0x02, 0x01, 'b', 0x04, 0}, true},
		{"empty map", []byte{0x1b, 0x00, 0}, true},
		{"long field id", []byte{0x05, 0xe8, 0x07, 0x02, 0}, true},
		{"nested 64 deep", append(bytes.Repeat([]byte{0x1c}, maxThriftDepth), make([]byte, maxThriftDepth+1)...), true},
		{"nested 65 deep", append(bytes.Repeat([]byte{0x1c}, maxThriftDepth+1), make([]byte, maxThriftDepth+2)...), false},
		{"list nested too deep", append(bytes.Repeat([]byte{0x19, 0x19}, 40), make([]byte, 41)...), false},
		{"binary past the end", []byte{0x18, 0x04, 'a', 'b', 'c', 0}, false},
		{"huge binary", []byte{0x18, 0xff, 0xff, 0xff, 0xff, 0x0f, 0}, false},
		{"list past the end", []byte{0x19, 0xf5, 0x05, 1, 1, 1, 1, 0}, false},
		{"huge list of bools", []byte{0x19, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07, 0}, false},
		{"huge map", []byte{0x1b, 0xff, 0xff, 0xff, 0xff, 0x07, 0x55, 0}, false},
		{"map of more pairs than bytes", []byte{0x1b, 0x03, 0x11, 1, 1, 1, 1, 0}, false},
		{"varint of 11 bytes", append(append([]byte{0x16}, bytes.Repeat([]byte{0x80}, 10)...), 0x01, 0), false},
		{"field id out of range", []byte{0x05, 0xff, 0xff, 0x07, 0x02, 0}, false},
		{"truncated", []byte{0x15}, false},
		{"unknown type", []byte{0x1f, 0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := thriftWalker{b: tc.b}
			err := w.skipStruct(0)
			if err == nil && w.pos != len(tc.b) {
				err = fmt.Errorf("stopped at %d of %d bytes", w.pos, len(tc.b))
			}
			if tc.ok != (err == nil) {
				t.Fatalf("err %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// pageHeaderBytes encodes a PageHeader as parquet-go writes one.
func pageHeaderBytes(t *testing.T, h format.PageHeader) []byte {
	t.Helper()
	b, err := thrift.Marshal(new(thrift.CompactProtocol), &h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGuardChunk: a column chunk's pages are walked header by header;
// pages that overrun the chunk, oversized pages, value counts beyond the
// chunk's, and chunks outside the file are refused.
func TestGuardChunk(t *testing.T) {
	data := func(n int32, values int32) format.PageHeader {
		h := format.PageHeader{Type: format.DataPage, UncompressedPageSize: n, CompressedPageSize: n}
		h.DataPageHeader.Valid = true
		h.DataPageHeader.V.NumValues = values
		return h
	}
	dict := func(n int32, values int32) format.PageHeader {
		h := format.PageHeader{Type: format.DictionaryPage, UncompressedPageSize: n, CompressedPageSize: n}
		h.DictionaryPageHeader.Valid = true
		h.DictionaryPageHeader.V.NumValues = values
		return h
	}
	big := data(10, 4)
	big.UncompressedPageSize = maxPageSize + 1
	negative := data(10, 4)
	negative.CompressedPageSize = -1
	for _, tc := range []struct {
		name   string
		pages  []format.PageHeader
		extra  int   // bytes after the last page, in the chunk
		values int64 // the chunk's value count
		ok     bool
	}{
		{"dictionary and two pages", []format.PageHeader{dict(40, 5), data(10, 4), data(20, 6)}, 0, 10, true},
		{"one page", []format.PageHeader{data(10, 4)}, 0, 4, true},
		{"page of a big header", []format.PageHeader{data(chunkWindow, 4), data(30, 4)}, 0, 8, true},
		{"page overruns the chunk", []format.PageHeader{data(10, 4)}, -1, 4, false},
		{"bytes after the pages", []format.PageHeader{data(10, 4)}, 3, 4, false},
		{"negative compressed size", []format.PageHeader{negative}, 0, 4, false},
		{"huge uncompressed size", []format.PageHeader{big}, 0, 4, false},
		{"more values than the chunk", []format.PageHeader{data(10, 5)}, 0, 4, false},
		{"dictionary of more values than bytes", []format.PageHeader{dict(2, 100)}, 0, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var chunk []byte
			for _, h := range tc.pages {
				chunk = append(chunk, pageHeaderBytes(t, h)...)
				chunk = append(chunk, make([]byte, max(h.CompressedPageSize, 0))...)
			}
			chunk = append(chunk, make([]byte, max(tc.extra, 0))...)
			file := parquetFileWith(chunk, []byte{0})
			c := chunkRange{start: 4, end: 4 + int64(len(chunk)+min(tc.extra, 0)), values: tc.values}
			for _, inMemory := range []bool{true, false} {
				var r io.ReaderAt = bytesReaderAt(file)
				if !inMemory {
					r = bytes.NewReader(file)
				}
				g := newGuard(tc.name, r, int64(len(file)))
				if err := g.footer(); err != nil {
					t.Fatal(err)
				}
				err := g.chunk(0, 0, c)
				if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrParquet)) {
					t.Fatalf("in memory %v: err %v, want ok %v", inMemory, err, tc.ok)
				}
			}
		})
	}
}

// TestGuardChunkOutside: a chunk that the footer puts outside the data
// is refused.
func TestGuardChunkOutside(t *testing.T) {
	file := parquetFileWith(make([]byte, 100), []byte{0})
	g := newGuard("f", bytesReaderAt(file), int64(len(file)))
	if err := g.footer(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []chunkRange{{start: 0, end: 10}, {start: 4, end: 3}, {start: 4, end: 106}, {start: 50, end: 1 << 40}} {
		if err := g.chunk(0, 0, c); !errors.Is(err, ErrParquet) {
			t.Errorf("chunk %+v: %v, want ErrParquet", c, err)
		}
	}
}

// pageRow is a row of the hand-made files: a dictionary-encoded column,
// a plain one, and an optional one with definition levels.
type pageRow struct {
	Dict     int32  `parquet:"dict,dict"`
	Plain    int32  `parquet:"plain"`
	Optional *int64 `parquet:"optional,optional"`
}

// writePages writes n rows as a parquet file with parquet-go's writer.
func writePages(t *testing.T, n int, options ...parquet.WriterOption) []byte {
	t.Helper()
	rows := make([]pageRow, n)
	for i := range rows {
		rows[i].Dict = int32(i % 10)
		rows[i].Plain = int32(i * 7919)
		if i%3 != 0 {
			v := int64(i)
			rows[i].Optional = &v
		}
	}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows, options...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// dataPageBody locates the data of the first data page of a column.
func dataPageBody(t *testing.T, file []byte, column int) (from, to int) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	m := f.Metadata().RowGroups[0].Columns[column].MetaData
	pos := m.DataPageOffset
	for {
		h, err := readPageHeader(file[pos:])
		if err != nil {
			t.Fatal(err)
		}
		from, to := int(pos+h.length), int(pos+h.length+h.compressed)
		if h.typ != dictionaryPage {
			return from, to
		}
		pos = int64(to)
	}
}

// TestGuardPageBombs: pages of parquet-go's writing, with their data
// damaged to make the library allocate gigabytes, are refused as
// ErrParquet having allocated little; undamaged, they read.
func TestGuardPageBombs(t *testing.T) {
	varint := func(u uint64) []byte { return binary.AppendUvarint(nil, u) }
	for _, tc := range []struct {
		name    string
		rows    int
		options []parquet.WriterOption
		column  int
		damage  func(t *testing.T, body []byte) // nil: the file is fine
	}{
		{"fine, v2", 1000, nil, 0, nil},
		{"fine, v1", 1000, []parquet.WriterOption{parquet.DataPageVersion(1)}, 2, nil},
		{"fine, zstd", 30000, []parquet.WriterOption{parquet.Compression(&parquet.Zstd)}, 1, nil},
		{"huge RLE run of dictionary indices", 1000, nil, 0, func(t *testing.T, b []byte) {
			copy(b[1:], varint(math.MaxInt32<<1)) // parquet-go: 8 GiB
		}},
		{"huge bit-packed run of dictionary indices", 1000, nil, 0, func(t *testing.T, b []byte) {
			copy(b[1:], varint(1<<28<<1|1)) // parquet-go: 8 GiB
		}},
		{"bad bit width of dictionary indices", 1000, nil, 0, func(t *testing.T, b []byte) { b[0] = 33 }},
		{"RLE run of definition levels past the page's values", 1000, []parquet.WriterOption{parquet.DataPageVersion(1)}, 2, func(t *testing.T, b []byte) {
			copy(b[4:], varint(1000<<1))
		}},
		{"snappy length lie", 1000, []parquet.WriterOption{parquet.Compression(&parquet.Snappy)}, 1, func(t *testing.T, b []byte) {
			_, k := binary.Uvarint(b)
			b[k-1] |= 0x7f // the same number of bytes, a larger length
		}},
		{"zstd page claiming a huge size", 30000, []parquet.WriterOption{parquet.Compression(&parquet.Zstd)}, 1, func(t *testing.T, b []byte) {
			if !bytes.HasPrefix(b, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
				t.Fatalf("not a zstd frame: % x", b[:8])
			}
			d := b[4]
			if d>>6 != 2 {
				t.Fatalf("frame descriptor %#x has no 4-byte content size", d)
			}
			at := 5
			if d&0x20 == 0 {
				at++ // a window descriptor
			}
			copy(b[at:], []byte{0xff, 0xff, 0xff, 0xff}) // parquet-go: 4 GiB
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writePages(t, tc.rows, tc.options...)
			if tc.damage != nil {
				from, to := dataPageBody(t, file, tc.column)
				tc.damage(t, file[from:to])
			}
			var err error
			alloc := allocated(func() { err = readEveryColumn(bytesReaderAt(file), int64(len(file))) })
			switch {
			case tc.damage == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.damage != nil && !errors.Is(err, ErrParquet):
				t.Fatalf("%v, want ErrParquet", err)
			}
			if alloc > 16<<20 {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
			t.Logf("%v; allocated %d KiB", err, alloc>>10)
		})
	}
}

// BenchmarkGuard reads every column of the fixture data files, with the
// guard (which decompresses and walks each page before parquet-go does)
// and with parquet-go alone.
func BenchmarkGuard(b *testing.B) {
	var files [][]byte
	for _, path := range []string{"lerobot_av1/data/chunk-000/file-000.parquet", "lerobot_av1/data/chunk-000/file-001.parquet", "lerobot_av1/data/chunk-000/file-002.parquet", "lerobot_h264/data/chunk-000/file-000.parquet", "lerobot_av1/meta/episodes/chunk-000/file-000.parquet"} {
		f, err := os.ReadFile(filepath.Join(fixtures, path))
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, f)
	}
	for _, guarded := range []bool{true, false} {
		b.Run(fmt.Sprintf("guard=%v", guarded), func(b *testing.B) {
			var values int
			for b.Loop() {
				for _, f := range files {
					n, err := scanEvery(f, guarded)
					if err != nil {
						b.Fatal(err)
					}
					values += n
				}
			}
			b.ReportMetric(float64(values)/b.Elapsed().Seconds(), "values/s")
		})
	}
}

// scanEvery opens a table and scans every column, with or without the
// guard, returning the values read.
func scanEvery(b []byte, guarded bool) (int, error) {
	tb, err := openTable("bench.parquet", bytesReaderAt(b), int64(len(b)))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, path := range tb.f.Schema().Columns() {
		c, err := tb.column(path...)
		if err != nil {
			return 0, err
		}
		if guarded {
			err = c.scan(0, tb.rows(), func(int64, parquet.Value) error { n++; return nil })
		} else {
			buf := make([]parquet.Value, 256)
			for _, rg := range tb.f.RowGroups() {
				err = c.scanGroup(rg, 0, 0, tb.rows(), buf, func(int64, parquet.Value) error { n++; return nil })
			}
		}
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}
