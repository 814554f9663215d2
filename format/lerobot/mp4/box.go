package mp4

import (
	"encoding/binary"
	"fmt"
)

// box is a box inside moov, its body sliced from the moov buffer.
type box struct {
	typ  string
	path string // e.g. "moov/trak[1]/mdia"
	body []byte // after the size, type and any 64-bit size
}

// children splits b, the body of the box at path, into its child boxes.
// trak boxes are named with their index among trak siblings.
func children(b []byte, path string) ([]box, error) {
	var kids []box
	traks := 0
	for off := 0; off < len(b); {
		rest := b[off:]
		if len(rest) < 8 {
			return nil, malformed(path, "%d trailing bytes, too few for a box header", len(rest))
		}
		typ := string(rest[4:8])
		kpath := path + "/" + typ
		if !printable(typ) {
			kpath = fmt.Sprintf("%s/%q", path, typ)
		}
		if typ == "trak" {
			kpath = fmt.Sprintf("%s/trak[%d]", path, traks)
			traks++
		}
		size, hlen := uint64(binary.BigEndian.Uint32(rest)), uint64(8)
		switch size {
		case 0:
			return nil, malformed(kpath, "size 0 (to the end of the file) is only allowed at the top level")
		case 1:
			if len(rest) < 16 {
				return nil, malformed(kpath, "%d bytes left, too few for a 64-bit box header", len(rest))
			}
			size, hlen = binary.BigEndian.Uint64(rest[8:]), 16
		}
		if size < hlen {
			return nil, malformed(kpath, "size %d is less than the %d-byte header", size, hlen)
		}
		if size > uint64(len(rest)) {
			return nil, malformed(kpath, "size %d is more than the %d bytes left in %s", size, len(rest), path)
		}
		kids = append(kids, box{typ: typ, path: kpath, body: rest[hlen:size]})
		off += int(size)
	}
	return kids, nil
}

// only returns the children of b with the given types, by type, and an
// error if one of them appears more than once or a required one (named in
// need) is missing.
func only(kids []box, parent string, types []string, need ...string) (map[string]*box, error) {
	got := make(map[string]*box, len(types))
	for i := range kids {
		for _, t := range types {
			if kids[i].typ != t {
				continue
			}
			if got[t] != nil {
				return nil, malformed(kids[i].path, "repeated")
			}
			got[t] = &kids[i]
		}
	}
	for _, t := range need {
		if got[t] == nil {
			return nil, malformed(parent, "no %s box", t)
		}
	}
	return got, nil
}

// cursor reads big-endian fields from a box body. Reads past the end
// return zeros and set short, which the caller checks once at the end.
type cursor struct {
	b     []byte
	short bool
}

func (c *cursor) take(n int) []byte {
	if c.short || n > len(c.b) {
		c.short, c.b = true, nil
		return nil
	}
	p := c.b[:n]
	c.b = c.b[n:]
	return p
}

func (c *cursor) skip(n int) { c.take(n) }

func (c *cursor) u8() uint8 {
	if p := c.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (c *cursor) u16() uint16 {
	if p := c.take(2); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}

func (c *cursor) u32() uint32 {
	if p := c.take(4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (c *cursor) u64() uint64 {
	if p := c.take(8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

// fullBox reads a full box's version and flags.
func (c *cursor) fullBox() (version uint8, flags uint32) {
	v := c.u32()
	return uint8(v >> 24), v & 0xffffff
}

// table reads a full box whose body is an entry count followed by entries
// of entrySize bytes, and returns the count and the entries' bytes. The
// entries must fit in the box; bytes after them are ignored.
func table(b *box, entrySize int) (version uint8, n int, entries []byte, err error) {
	c := cursor{b: b.body}
	version, _ = c.fullBox()
	count := c.u32()
	if c.short {
		return 0, 0, nil, malformed(b.path, "box is %d bytes, too short for its header", len(b.body))
	}
	if uint64(count)*uint64(entrySize) > uint64(len(c.b)) {
		return 0, 0, nil, malformed(b.path, "%d entries of %d bytes do not fit in the %d bytes left", count, entrySize, len(c.b))
	}
	return version, int(count), c.b[:int(count)*entrySize], nil
}
