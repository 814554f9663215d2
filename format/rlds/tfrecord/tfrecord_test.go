package tfrecord

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// payloads returns n deterministic payloads with the given sizes (cycled).
func payloads(seed uint64, sizes ...int) [][]byte {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]byte, len(sizes))
	for i, n := range sizes {
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(r.Uint32())
		}
		out[i] = p
	}
	return out
}

func file(recs [][]byte) []byte {
	var b []byte
	for _, r := range recs {
		b = AppendRecord(b, r)
	}
	return b
}

// wantSpans computes the spans of recs from their sizes alone.
func wantSpans(recs [][]byte) []Span {
	var spans []Span
	off := int64(0)
	for _, r := range recs {
		spans = append(spans, Span{Offset: off, Len: int64(len(r))})
		off += int64(HeaderLen + len(r) + FooterLen)
	}
	return spans
}

// scanAll runs a Scanner over b and returns its spans, payload copies and
// error.
func scanAll(b []byte, maxRecord int64) ([]Span, [][]byte, error) {
	sc := NewScanner(bytes.NewReader(b), maxRecord)
	var spans []Span
	var recs [][]byte
	for sc.Next() {
		spans = append(spans, sc.Span())
		recs = append(recs, bytes.Clone(sc.Record()))
	}
	return spans, recs, sc.Err()
}

// indexChunked feeds b to an Indexer chunk bytes at a time.
func indexChunked(b []byte, chunk int, maxRecord int64) ([]Span, error) {
	x := NewIndexer(maxRecord)
	for len(b) > 0 {
		c := min(chunk, len(b))
		n, err := x.Write(b[:c])
		if err != nil {
			if n > c {
				return nil, fmt.Errorf("Write returned n=%d > len %d", n, c)
			}
			return nil, err
		}
		if n != c {
			return nil, fmt.Errorf("Write returned n=%d, want %d with nil error", n, c)
		}
		b = b[c:]
	}
	if err := x.Close(); err != nil {
		return nil, err
	}
	return x.Spans(), nil
}

func asCorrupt(t *testing.T, err error) *CorruptError {
	t.Helper()
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("error %v does not match ErrCorrupt", err)
	}
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a *CorruptError", err)
	}
	return ce
}

func TestMaskedCRCKnownAnswers(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		crc  uint32 // published CRC32C
		want uint32 // masked
	}{
		// The CRC-32C check value from the CRC catalogue.
		{"check string", []byte("123456789"), 0xE3069283, 0xC78AB0E5},
		// RFC 3720 (iSCSI) appendix B.4 test vectors.
		{"32 zeros", make([]byte, 32), 0x8A9136AA, 0x0FD7FFFA},
		{"32 ones", bytes.Repeat([]byte{0xff}, 32), 0x62A8AB43, 0xF909B029},
		{"incrementing", func() []byte {
			b := make([]byte, 32)
			for i := range b {
				b[i] = byte(i)
			}
			return b
		}(), 0x46DD794E, 0x951F7892},
		// CRC of nothing is 0, so the mask is just the constant.
		{"empty", nil, 0, 0xA282EAD8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := crc32.Checksum(tc.in, castagnoli); got != tc.crc {
				t.Fatalf("CRC32C = %#08x, want published %#08x", got, tc.crc)
			}
			// The mask is a rotate right by 15 plus a constant.
			if m := bits.RotateLeft32(tc.crc, -15) + 0xa282ead8; m != tc.want {
				t.Fatalf("test table inconsistent: rotr15+k = %#08x, want %#08x", m, tc.want)
			}
			if got := MaskedCRC(tc.in); got != tc.want {
				t.Errorf("MaskedCRC = %#08x, want %#08x", got, tc.want)
			}
		})
	}
}

func TestAppendRecordLayout(t *testing.T) {
	// "hello": length 5, masked CRC32C of the 8 length bytes, the data,
	// masked CRC32C("hello") (CRC32C("hello") = 0x9A71BB4C).
	want := []byte{
		5, 0, 0, 0, 0, 0, 0, 0,
		0xea, 0xb2, 0x04, 0x3e,
		'h', 'e', 'l', 'l', 'o',
		0xbb, 0x1f, 0x1c, 0x19,
	}
	if got := AppendRecord(nil, []byte("hello")); !bytes.Equal(got, want) {
		t.Errorf("AppendRecord(hello) = % x\nwant                 % x", got, want)
	}
	var buf bytes.Buffer
	if err := NewWriter(&buf).Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("Writer.Write(hello) = % x\nwant                 % x", buf.Bytes(), want)
	}
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int
	}{
		{"empty file", nil},
		{"one empty record", []int{0}},
		{"one byte", []int{1}},
		{"mixed", []int{0, 1, 11, 12, 16, 100, 0, 4093}},
		{"larger than scanner buffer", []int{70000, 3, 200000}},
		{"around the read chunk", []int{readChunk - 5, readChunk - 4, readChunk - 1, readChunk, readChunk + 1, 2*readChunk + 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs := payloads(uint64(len(tc.sizes)), tc.sizes...)
			b := file(recs)
			var w bytes.Buffer
			wr := NewWriter(&w)
			for _, r := range recs {
				if err := wr.Write(r); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(w.Bytes(), b) {
				t.Fatal("Writer and AppendRecord disagree")
			}
			want := wantSpans(recs)

			spans, err := Index(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatalf("Index: %v", err)
			}
			if !slices.Equal(spans, want) {
				t.Fatalf("Index spans = %v, want %v", spans, want)
			}
			var buf []byte
			for i, s := range spans {
				buf, err = ReadRecord(bytes.NewReader(b), s, buf)
				if err != nil {
					t.Fatalf("ReadRecord %d: %v", i, err)
				}
				if !bytes.Equal(buf, recs[i]) {
					t.Fatalf("ReadRecord %d: payload differs", i)
				}
				if s.End() != s.Offset+int64(HeaderLen+len(recs[i])+FooterLen) {
					t.Fatalf("span %d End = %d", i, s.End())
				}
			}

			sspans, srecs, err := scanAll(b, 0)
			if err != nil {
				t.Fatalf("Scanner: %v", err)
			}
			if !slices.Equal(sspans, want) {
				t.Fatalf("Scanner spans = %v, want %v", sspans, want)
			}
			for i := range recs {
				if !bytes.Equal(srecs[i], recs[i]) {
					t.Fatalf("Scanner record %d differs", i)
				}
			}

			for _, chunk := range []int{1, 7, 12, 13, 4096, len(b) + 1} {
				ispans, err := indexChunked(b, chunk, 0)
				if err != nil {
					t.Fatalf("Indexer chunk %d: %v", chunk, err)
				}
				if !slices.Equal(ispans, want) && !(len(ispans) == 0 && len(want) == 0) {
					t.Fatalf("Indexer chunk %d spans = %v, want %v", chunk, ispans, want)
				}
			}
		})
	}
}

// TestReadersAgreeEveryChunkSize feeds one file to the Indexer in chunks of
// every size from 1 to the file's length.
func TestReadersAgreeEveryChunkSize(t *testing.T) {
	recs := payloads(7, 0, 5, 31, 1, 64, 0, 3)
	b := file(recs)
	want, err := Index(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	sspans, _, err := scanAll(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sspans, want) {
		t.Fatalf("Scanner spans %v, Index spans %v", sspans, want)
	}
	for chunk := 1; chunk <= len(b); chunk++ {
		t.Run(fmt.Sprint("chunk", chunk), func(t *testing.T) {
			got, err := indexChunked(b, chunk, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("Indexer spans %v, Index spans %v", got, want)
			}
		})
	}
}

// TestCorruption damages one record of a three-record file in each way and
// checks that every reader names that record.
func TestCorruption(t *testing.T) {
	recs := payloads(3, 10, 20, 30)
	clean := file(recs)
	spans := wantSpans(recs)
	second := spans[1]

	hugeHeader := func(n uint64) func([]byte) {
		return func(b []byte) { putHeader(b[second.Offset:second.Offset+HeaderLen], n) }
	}
	tests := []struct {
		name   string
		damage func(b []byte)
		max    int64 // limit for Scanner and Indexer
		// Index only reads headers: wantIndex is its reason, "" when it
		// must succeed.
		wantIndex  string
		wantStream string // reason from Scanner, Indexer and ReadRecord
	}{
		{"flipped length byte", func(b []byte) { b[second.Offset+3] ^= 0x10 }, 0, reasonLengthCRC, reasonLengthCRC},
		{"flipped length crc", func(b []byte) { b[second.Offset+9] ^= 0x01 }, 0, reasonLengthCRC, reasonLengthCRC},
		{"flipped data byte", func(b []byte) { b[second.Offset+HeaderLen+4] ^= 0x80 }, 0, "", reasonDataCRC},
		{"flipped data crc", func(b []byte) { b[second.End()-1] ^= 0x02 }, 0, "", reasonDataCRC},
		// A huge length with a valid CRC: past the end of the file for
		// Index, past the limit for the streaming readers.
		{"huge length", hugeHeader(123456789), 1 << 20, reasonTruncated, "record length 123456789 exceeds limit 1048576"},
		{"max uint64 length", hugeHeader(^uint64(0)), 0, reasonTruncated, fmt.Sprintf("record length %d exceeds limit %d", ^uint64(0), defaultMaxRecord)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(clean)
			tc.damage(b)
			check := func(who string, err error, reason string) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s: no error", who)
				}
				ce := asCorrupt(t, err)
				if ce.Offset != second.Offset || ce.Index != 1 || ce.Reason != reason {
					t.Errorf("%s: got %+v, want {Offset:%d Index:1 Reason:%q}", who, *ce, second.Offset, reason)
				}
			}

			ispans, err := Index(bytes.NewReader(b), int64(len(b)))
			if tc.wantIndex == "" {
				if err != nil || !slices.Equal(ispans, spans) {
					t.Errorf("Index = %v, %v; want clean spans", ispans, err)
				}
			} else {
				check("Index", err, tc.wantIndex)
				if !slices.Equal(ispans, spans[:1]) {
					t.Errorf("Index returned %v with its error, want the readable prefix %v", ispans, spans[:1])
				}
			}

			_, _, err = scanAll(b, tc.max)
			check("Scanner", err, tc.wantStream)
			for _, chunk := range []int{1, 5, len(b)} {
				_, err = indexChunked(b, chunk, tc.max)
				check(fmt.Sprint("Indexer chunk ", chunk), err, tc.wantStream)
			}

			// ReadRecord with the clean span: the first record still
			// reads, the second is reported (its index is unknown here).
			if _, err := ReadRecord(bytes.NewReader(b), spans[0], nil); err != nil {
				t.Errorf("ReadRecord of intact record 0: %v", err)
			}
			_, err = ReadRecord(bytes.NewReader(b), second, nil)
			if err == nil {
				t.Fatal("ReadRecord of damaged record: no error")
			}
			ce := asCorrupt(t, err)
			if ce.Offset != second.Offset || ce.Index != -1 {
				t.Errorf("ReadRecord error %+v, want Offset %d Index -1", *ce, second.Offset)
			}
		})
	}
}

// TestTruncationEveryByte cuts a small file at every byte position.
func TestTruncationEveryByte(t *testing.T) {
	recs := payloads(5, 3, 0, 9)
	full := file(recs)
	spans := wantSpans(recs)
	for cut := 0; cut <= len(full); cut++ {
		b := full[:cut]
		// The record the cut falls in, or len(spans) at a boundary.
		rec, boundary := len(spans), false
		for i, s := range spans {
			if int64(cut) == s.Offset {
				rec, boundary = i, true
				break
			}
			if int64(cut) > s.Offset && int64(cut) < s.End() {
				rec = i
				break
			}
		}
		if cut == len(full) {
			boundary = true
		}
		t.Run(fmt.Sprint("cut", cut), func(t *testing.T) {
			check := func(who string, got []Span, err error) {
				t.Helper()
				if boundary {
					if err != nil {
						t.Fatalf("%s at a record boundary: %v", who, err)
					}
					if !slices.Equal(got, spans[:rec]) && !(len(got) == 0 && rec == 0) {
						t.Fatalf("%s spans = %v, want %v", who, got, spans[:rec])
					}
					return
				}
				if err == nil {
					t.Fatalf("%s: no error", who)
				}
				ce := asCorrupt(t, err)
				if ce.Index != rec || ce.Offset != spans[rec].Offset || ce.Reason != reasonTruncated {
					t.Fatalf("%s: got %+v, want record %d at %d truncated", who, *ce, rec, spans[rec].Offset)
				}
			}
			got, err := Index(bytes.NewReader(b), int64(len(b)))
			check("Index", got, err)
			if err != nil && !slices.Equal(got, spans[:rec]) && !(len(got) == 0 && rec == 0) {
				t.Fatalf("Index returned %v with its error, want the readable prefix %v", got, spans[:rec])
			}
			got, _, err = scanAll(b, 0)
			check("Scanner", got, err)
			got, err = indexChunked(b, 1, 0)
			check("Indexer", got, err)
			got, err = indexChunked(b, 1<<20, 0)
			check("Indexer one write", got, err)
			// Index told a larger size than the reader holds notices when a
			// header it needs is missing; a cut inside the last record's data
			// is left for ReadRecord to find, since Index reads only headers.
			last := spans[len(spans)-1]
			_, err = Index(bytes.NewReader(b), int64(len(full)))
			switch {
			case int64(cut) < last.Offset+HeaderLen:
				if err == nil {
					t.Fatal("Index with a size past the data: no error")
				}
				asCorrupt(t, err)
			case err != nil:
				t.Fatalf("Index with only the last record's data cut: %v", err)
			}
			if rec < len(spans) && !boundary {
				_, err = ReadRecord(bytes.NewReader(b), spans[rec], nil)
				if err == nil {
					t.Fatal("ReadRecord of a cut record: no error")
				}
				if ce := asCorrupt(t, err); ce.Reason != reasonTruncated || ce.Offset != spans[rec].Offset {
					t.Fatalf("ReadRecord: %+v", *ce)
				}
			}
		})
	}
}

type failingReader struct{ err error }

func (f failingReader) ReadAt([]byte, int64) (int, error) { return 0, f.err }
func (f failingReader) Read([]byte) (int, error)          { return 0, f.err }

func TestErrorsThatAreNotCorruption(t *testing.T) {
	ioErr := errors.New("disk on fire")
	b := file(payloads(1, 10))
	tests := []struct {
		name   string
		run    func() error
		target error // errors.Is target, nil for "any non-corrupt error"
	}{
		{"Index io error", func() error { _, err := Index(failingReader{ioErr}, 100); return err }, ioErr},
		{"ReadRecord io error", func() error {
			_, err := ReadRecord(failingReader{ioErr}, Span{Offset: 0, Len: 10}, nil)
			return err
		}, ioErr},
		{"Scanner io error", func() error { _, _, err := scanAllFrom(failingReader{ioErr}); return err }, ioErr},
		{"Index negative size", func() error { _, err := Index(bytes.NewReader(b), -1); return err }, nil},
		{"ReadRecord negative span", func() error {
			_, err := ReadRecord(bytes.NewReader(b), Span{Offset: -1, Len: 10}, nil)
			return err
		}, nil},
		{"ReadRecord overflowing span", func() error {
			_, err := ReadRecord(bytes.NewReader(b), Span{Offset: 1 << 62, Len: 1 << 62}, nil)
			return err
		}, nil},
		{"Indexer write after close", func() error {
			x := NewIndexer(0)
			if err := x.Close(); err != nil {
				return err
			}
			_, err := x.Write([]byte{1})
			return err
		}, errWriteAfterClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v matches ErrCorrupt", err)
			}
			if tc.target != nil && !errors.Is(err, tc.target) {
				t.Fatalf("%v does not wrap %v", err, tc.target)
			}
		})
	}
}

func scanAllFrom(r io.Reader) ([]Span, [][]byte, error) {
	sc := NewScanner(r, 0)
	var spans []Span
	for sc.Next() {
		spans = append(spans, sc.Span())
	}
	return spans, nil, sc.Err()
}

func TestReadRecordSpanMismatch(t *testing.T) {
	recs := payloads(2, 10, 20)
	b := file(recs)
	spans := wantSpans(recs)
	tests := []struct {
		name string
		span Span
	}{
		{"length too short", Span{Offset: spans[1].Offset, Len: 19}},
		{"length too long", Span{Offset: spans[1].Offset, Len: 1 << 40}},
		{"offset inside a record", Span{Offset: 3, Len: 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf, err := ReadRecord(bytes.NewReader(b), tc.span, nil)
			if err == nil {
				t.Fatal("no error")
			}
			asCorrupt(t, err)
			if cap(buf) > 1<<20 {
				t.Fatalf("allocated %d bytes for a made-up span", cap(buf))
			}
		})
	}
}

// TestChunkBoundaries damages records whose data or footer straddles the
// boundary of ReadRecord's and the Scanner's read chunks.
func TestChunkBoundaries(t *testing.T) {
	for _, size := range []int{readChunk - 5, readChunk - 4, readChunk - 2, readChunk, readChunk + 1, 2 * readChunk} {
		rec := file(payloads(uint64(size), size))
		span := Span{Offset: 0, Len: int64(size)}
		positions := map[string]int{
			"clean":           -1,
			"first data byte": HeaderLen,
			"last data byte":  HeaderLen + size - 1,
			"footer byte 0":   HeaderLen + size,
			"footer byte 3":   HeaderLen + size + 3,
		}
		if size > readChunk {
			positions["last byte of first chunk"] = HeaderLen + readChunk - 1
			positions["first byte of second chunk"] = HeaderLen + readChunk
		}
		for name, pos := range positions {
			t.Run(fmt.Sprintf("size %d/%s", size, name), func(t *testing.T) {
				b := bytes.Clone(rec)
				if pos >= 0 {
					b[pos] ^= 0x40
				}
				got, err := ReadRecord(bytes.NewReader(b), span, nil)
				_, _, serr := scanAll(b, 0)
				if pos < 0 {
					if err != nil || serr != nil {
						t.Fatalf("clean record: ReadRecord %v, Scanner %v", err, serr)
					}
					if !bytes.Equal(got, b[HeaderLen:HeaderLen+size]) {
						t.Fatal("payload differs")
					}
					return
				}
				for who, err := range map[string]error{"ReadRecord": err, "Scanner": serr} {
					if err == nil {
						t.Fatalf("%s: no error", who)
					}
					if ce := asCorrupt(t, err); ce.Reason != reasonDataCRC || ce.Offset != 0 {
						t.Fatalf("%s: %+v", who, *ce)
					}
				}
			})
		}
	}
}

func TestReadRecordReusesBuffer(t *testing.T) {
	recs := payloads(4, 100, 50)
	b := file(recs)
	spans := wantSpans(recs)
	buf := make([]byte, 0, 256)
	got, err := ReadRecord(bytes.NewReader(b), spans[1], buf)
	if err != nil {
		t.Fatal(err)
	}
	if &got[:1][0] != &buf[:1][0] {
		t.Error("ReadRecord did not reuse a large enough buffer")
	}
	if !bytes.Equal(got, recs[1]) {
		t.Error("payload differs")
	}
}

func TestReadRecordFromFile(t *testing.T) {
	recs := payloads(9, 1000, 0, 70000)
	path := filepath.Join(t.TempDir(), "x.tfrecord")
	if err := os.WriteFile(path, file(recs), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	spans, err := Index(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(spans, wantSpans(recs)) {
		t.Fatalf("spans %v", spans)
	}
	var buf []byte
	for i, s := range spans {
		if buf, err = ReadRecord(f, s, buf); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !bytes.Equal(buf, recs[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
}

// checkAgree is the fuzz property: on any input the three readers never
// panic, report only corruption, and agree.
func checkAgree(t *testing.T, data []byte, chunk int, maxRecord int64) {
	size := int64(len(data))
	ispans, ierr := Index(bytes.NewReader(data), size)
	sspans, srecs, serr := scanAll(data, maxRecord)
	xspans, xerr := indexChunked(data, chunk, maxRecord)
	for who, err := range map[string]error{"Index": ierr, "Scanner": serr, "Indexer": xerr} {
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: error %v is not corruption", who, err)
		}
	}
	// Scanner and Indexer make the same checks in the same order.
	if fmt.Sprint(serr) != fmt.Sprint(xerr) {
		t.Fatalf("Scanner error %v, Indexer error %v", serr, xerr)
	}
	if serr == nil {
		if !slices.Equal(sspans, xspans) && !(len(sspans) == 0 && len(xspans) == 0) {
			t.Fatalf("Scanner spans %v, Indexer spans %v", sspans, xspans)
		}
		// Whatever passes both CRCs also passes Index's header checks.
		if ierr != nil {
			t.Fatalf("Scanner accepted what Index rejected: %v", ierr)
		}
		if !slices.Equal(ispans, sspans) && !(len(ispans) == 0 && len(sspans) == 0) {
			t.Fatalf("Index spans %v, Scanner spans %v", ispans, sspans)
		}
		var buf []byte
		var err error
		for i, s := range ispans {
			if buf, err = ReadRecord(bytes.NewReader(data), s, buf); err != nil {
				t.Fatalf("ReadRecord %d: %v", i, err)
			}
			if !bytes.Equal(buf, srecs[i]) {
				t.Fatalf("ReadRecord %d differs from Scanner", i)
			}
		}
		return
	}
	if ierr != nil {
		// Index returns the records before the bad one.
		ie := asCorrupt(t, ierr)
		if len(ispans) != ie.Index {
			t.Fatalf("Index returned %d spans with an error at record %d", len(ispans), ie.Index)
		}
		if n := len(ispans); n > 0 && ispans[n-1].End() != ie.Offset {
			t.Fatalf("Index's last span ends at %d, its error is at %d", ispans[n-1].End(), ie.Offset)
		}
		// The streaming readers check data CRCs too, so they stop no later
		// than Index.
		se := asCorrupt(t, serr)
		if se.Offset > ie.Offset {
			t.Fatalf("Scanner stopped at %d, after Index's error at %d", se.Offset, ie.Offset)
		}
	}
	// Every span Index returned that the Scanner verified reads back.
	se := asCorrupt(t, serr)
	var buf []byte
	var err error
	for i, s := range ispans {
		if s.Offset >= se.Offset {
			break
		}
		if buf, err = ReadRecord(bytes.NewReader(data), s, buf); err != nil {
			t.Fatalf("ReadRecord %d before the first bad record: %v", i, err)
		}
	}
}

func fuzzSeeds() [][]byte {
	ok := file(payloads(11, 0, 1, 17, 300))
	bad := bytes.Clone(ok)
	bad[len(bad)-1] ^= 1
	// A real-looking record: a small tf.train.Example with one int64 feature
	// "steps/is_first" = [1], hand-encoded.
	example := []byte{0x0a, 0x18, 0x0a, 0x16, 0x0a, 0x0e, 's', 't', 'e', 'p', 's', '/', 'i', 's', '_', 'f', 'i', 'r', 's', 't', 0x12, 0x04, 0x1a, 0x02, 0x08, 0x01}
	return [][]byte{
		nil,
		ok,
		bad,
		ok[:len(ok)-3],
		AppendRecord(nil, []byte("hello")),
		file([][]byte{example, example}),
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0},
	}
}

func FuzzIndex(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgree(t, data, 4096, int64(len(data))+1)
	})
}

func FuzzScanner(f *testing.F) {
	for i, s := range fuzzSeeds() {
		f.Add(s, uint16(i+1), uint16(64))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk, maxRecord uint16) {
		// maxRecord 0 selects the default limit.
		checkAgree(t, data, int(chunk)+1, int64(maxRecord))
	})
}

func BenchmarkReadRecord(b *testing.B) {
	const size = 1 << 20
	rec := file(payloads(1, size))
	span := Span{Offset: 0, Len: size}
	path := filepath.Join(b.TempDir(), "bench.tfrecord")
	if err := os.WriteFile(path, rec, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for _, bc := range []struct {
		name string
		r    io.ReaderAt
	}{
		{"mem", bytes.NewReader(rec)},
		{"file", f},
	} {
		for _, read := range []struct {
			name string
			fn   func(io.ReaderAt, Span, []byte) ([]byte, error)
		}{{"", ReadRecord}, {"/known", ReadRecordKnown}} {
			b.Run(bc.name+read.name, func(b *testing.B) {
				buf := make([]byte, 0, size+FooterLen)
				b.SetBytes(size)
				b.ReportAllocs()
				for b.Loop() {
					var err error
					if buf, err = read.fn(bc.r, span, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// FuzzReadRecordKnown: on any bytes and span, ReadRecordKnown returns what
// ReadRecord returns whenever ReadRecord succeeds, fails whenever the
// header is wrong (ReadRecord fails for a reason other than the data CRC),
// and never allocates past 1 MiB for a span its header does not confirm.
func FuzzReadRecordKnown(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s, uint16(0), uint16(len(s)))
	}
	f.Add(file(payloads(3, 10, 20)), uint16(len(file(payloads(3, 10)))), uint16(20))
	f.Fuzz(func(t *testing.T, data []byte, off, n uint16) {
		s := Span{Offset: int64(off), Len: int64(n)}
		want, werr := ReadRecord(bytes.NewReader(data), s, nil)
		got, gerr := ReadRecordKnown(bytes.NewReader(data), s, nil)
		if gerr != nil && cap(got) > 1<<20 {
			t.Fatalf("allocated %d bytes for a span that failed", cap(got))
		}
		var ce *CorruptError
		switch {
		case werr == nil && (gerr != nil || !bytes.Equal(got, want)):
			t.Fatalf("ReadRecord read %d bytes; ReadRecordKnown %d bytes, err %v", len(want), len(got), gerr)
		case werr != nil && gerr == nil && !(errors.As(werr, &ce) && ce.Reason == reasonDataCRC):
			t.Fatalf("ReadRecord failed (%v) for a reason other than the data CRC; ReadRecordKnown did not", werr)
		}
	})
}

func BenchmarkIndexer(b *testing.B) {
	data := file(payloads(2, 1<<20, 1<<20, 1<<20, 1<<20, 300<<10, 17, 1<<20, 2<<20))
	const chunk = 32 << 10 // io.Copy's buffer size
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		x := NewIndexer(0)
		for p := data; len(p) > 0; {
			c := min(chunk, len(p))
			if _, err := x.Write(p[:c]); err != nil {
				b.Fatal(err)
			}
			p = p[c:]
		}
		if err := x.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScanner(b *testing.B) {
	data := file(payloads(3, 1<<20, 1<<20, 1<<20, 1<<20, 300<<10, 17, 1<<20, 2<<20))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	r := bytes.NewReader(data)
	for b.Loop() {
		r.Reset(data)
		sc := NewScanner(r, 0)
		for sc.Next() {
		}
		if err := sc.Err(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIndex(b *testing.B) {
	sizes := make([]int, 1000)
	for i := range sizes {
		sizes[i] = 1000 + i
	}
	data := file(payloads(4, sizes...))
	r := bytes.NewReader(data)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Index(r, int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(sizes))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func TestHeaderHelpers(t *testing.T) {
	tests := []uint64{0, 1, 255, 1 << 32, ^uint64(0)}
	for _, n := range tests {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var h [HeaderLen]byte
			putHeader(h[:], n)
			if got := binary.LittleEndian.Uint64(h[:8]); got != n {
				t.Fatalf("length bytes %d", got)
			}
			got, ok := parseHeader(h[:])
			if !ok || got != n {
				t.Fatalf("parseHeader = %d, %v", got, ok)
			}
			h[8] ^= 1
			if _, ok := parseHeader(h[:]); ok {
				t.Fatal("parseHeader accepted a flipped CRC")
			}
		})
	}
}
