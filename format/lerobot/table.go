package lerobot

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// ErrMissingColumn matches a parquet file that lacks a column oxefs needs.
var ErrMissingColumn = errors.New("missing column")

// table is one parquet file, opened for reading columns by name.
type table struct {
	name string
	f    *parquet.File
	g    *guard
}

// openTable reads a parquet file's footer through r.
func openTable(name string, r io.ReaderAt, size int64) (t *table, err error) {
	defer recoverParquet(name, &err)
	g := newGuard(name, r, size)
	if err := g.footer(); err != nil {
		return nil, err
	}
	f, err := parquet.OpenFile(g.reader(), size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.ReadBufferSize(1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable parquet file: %w", name, err)
	}
	return &table{name: name, f: f, g: g}, nil
}

// ErrParquet matches a parquet file the parquet library could not read
// without failing inside: its bytes are damaged.
var ErrParquet = errors.New("unreadable parquet file")

// recoverParquet turns a panic of the parquet library on damaged bytes
// (it indexes by lengths read from the file) into an error naming the
// file, so that one bad file is a corrupt episode, not a crashed daemon.
func recoverParquet(name string, err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: %w: %v", name, ErrParquet, p)
	}
}

// rows is the number of rows.
func (t *table) rows() int64 { return t.f.NumRows() }

// columns lists the leaf columns, dotted, for errors.
func (t *table) columns() []string {
	var out []string
	for _, p := range t.f.Schema().Columns() {
		out = append(out, strings.Join(p, "."))
	}
	return out
}

// has reports whether the leaf column path exists.
func (t *table) has(path ...string) bool {
	_, ok := t.f.Schema().Lookup(path...)
	return ok
}

// column is one leaf column, located.
type column struct {
	t    *table
	leaf parquet.LeafColumn
	name string
}

// column finds a leaf column. A name that is a list (LeRobot's vectors:
// "action" stored as action.list.element) is found through its element.
func (t *table) column(path ...string) (*column, error) {
	schema := t.f.Schema()
	if leaf, ok := schema.Lookup(path...); ok && leaf.Node.Leaf() {
		return &column{t: t, leaf: leaf, name: strings.Join(path, ".")}, nil
	}
	for _, tail := range [][]string{{"list", "element"}, {"list", "item"}, {"bag", "array_element"}, {"element"}, {"array"}} {
		if leaf, ok := schema.Lookup(append(append([]string(nil), path...), tail...)...); ok && leaf.Node.Leaf() {
			return &column{t: t, leaf: leaf, name: strings.Join(path, ".")}, nil
		}
	}
	return nil, fmt.Errorf("%s: %w %q (columns: %s)", t.name, ErrMissingColumn, strings.Join(path, "."), strings.Join(t.columns(), ", "))
}

// repeated reports whether the column holds a list per row.
func (c *column) repeated() bool { return c.leaf.MaxRepetitionLevel > 0 }

// scan calls visit for every value of rows [from, to), in order, with the
// row's index relative to from; a list row calls it once per element (and
// not at all when the list is empty or null). A null scalar calls visit
// with a null value.
func (c *column) scan(from, to int64, visit func(row int64, v parquet.Value) error) (err error) {
	defer recoverParquet(c.t.name, &err)
	if from < 0 || to > c.t.rows() || from > to {
		return fmt.Errorf("%s: rows [%d, %d) asked, it has %d", c.t.name, from, to, c.t.rows())
	}
	buf := make([]parquet.Value, 256)
	var base int64 // first row of the row group
	for i, rg := range c.t.f.RowGroups() {
		n := rg.NumRows()
		if base+n <= from {
			base += n
			continue
		}
		if base >= to {
			break
		}
		if err := c.guard(i); err != nil {
			return err
		}
		if err := c.scanGroup(rg, base, from, to, buf, visit); err != nil {
			return err
		}
		base += n
	}
	return nil
}

func (c *column) scanGroup(rg parquet.RowGroup, base, from, to int64, buf []parquet.Value, visit func(int64, parquet.Value) error) error {
	chunks := rg.ColumnChunks()
	if c.leaf.ColumnIndex >= len(chunks) {
		return fmt.Errorf("%s: column %s missing from a row group", c.t.name, c.name)
	}
	pages := chunks[c.leaf.ColumnIndex].Pages()
	defer pages.Close()
	row := base - 1
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: column %s: %w", c.t.name, c.name, err)
		}
		err = c.scanPage(p, &row, from, to, buf, visit)
		parquet.Release(p)
		if err != nil {
			return err
		}
		if row >= to {
			return nil
		}
	}
}

func (c *column) scanPage(p parquet.Page, row *int64, from, to int64, buf []parquet.Value, visit func(int64, parquet.Value) error) error {
	vr := p.Values()
	for {
		n, err := vr.ReadValues(buf)
		for _, v := range buf[:n] {
			if v.RepetitionLevel() == 0 {
				*row++
			}
			if *row < from {
				continue
			}
			if *row >= to {
				return nil
			}
			if c.repeated() && v.DefinitionLevel() < c.leaf.MaxDefinitionLevel {
				continue // an empty or null list, or a null element
			}
			if err := visit(*row-from, v); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: column %s: %w", c.t.name, c.name, err)
		}
	}
}

// int64s reads a scalar integer column over rows [from, to). A null is an
// error.
func (c *column) int64s(from, to int64) ([]int64, error) {
	out := make([]int64, 0, to-from)
	err := c.scan(from, to, func(row int64, v parquet.Value) error {
		if v.IsNull() || row != int64(len(out)) {
			return fmt.Errorf("%s: column %s: row %d is null", c.t.name, c.name, from+row)
		}
		x, ok := intOf(v)
		if !ok {
			return fmt.Errorf("%s: column %s is %s, not an integer", c.t.name, c.name, v.Kind())
		}
		out = append(out, x)
		return nil
	})
	if err == nil && int64(len(out)) != to-from {
		err = fmt.Errorf("%s: column %s: %d values for %d rows", c.t.name, c.name, len(out), to-from)
	}
	return out, err
}

// float64s reads a numeric column over rows [from, to), per values per
// row (a scalar column is per 1; a list column must hold exactly per
// elements in every row).
func (c *column) float64s(from, to int64, per int) ([]float64, error) {
	out := make([]float64, 0, (to-from)*int64(per))
	err := c.scan(from, to, func(row int64, v parquet.Value) error {
		if v.IsNull() {
			return fmt.Errorf("%s: column %s: row %d holds a null", c.t.name, c.name, from+row)
		}
		if int64(len(out)) >= (row+1)*int64(per) {
			return fmt.Errorf("%s: column %s: row %d holds more than %d values", c.t.name, c.name, from+row, per)
		}
		x, ok := floatOf(v)
		if !ok {
			return fmt.Errorf("%s: column %s is %s, not a number", c.t.name, c.name, v.Kind())
		}
		out = append(out, x)
		return nil
	})
	if err == nil && int64(len(out)) != (to-from)*int64(per) {
		err = fmt.Errorf("%s: column %s: %d values for %d rows of %d", c.t.name, c.name, len(out), to-from, per)
	}
	return out, err
}

// bytes reads a scalar byte-array column over rows [from, to), copying
// each value out of the page; a null row is nil.
func (c *column) bytes(from, to int64) ([][]byte, error) {
	out := make([][]byte, to-from)
	seen := int64(0)
	err := c.scan(from, to, func(row int64, v parquet.Value) error {
		seen++
		if v.IsNull() {
			return nil
		}
		if v.Kind() != parquet.ByteArray && v.Kind() != parquet.FixedLenByteArray {
			return fmt.Errorf("%s: column %s is %s, not bytes", c.t.name, c.name, v.Kind())
		}
		out[row] = append([]byte{}, v.ByteArray()...)
		return nil
	})
	if err == nil && seen != to-from {
		err = fmt.Errorf("%s: column %s: %d values for %d rows", c.t.name, c.name, seen, to-from)
	}
	return out, err
}

func intOf(v parquet.Value) (int64, bool) {
	switch v.Kind() {
	case parquet.Int32:
		return int64(v.Int32()), true
	case parquet.Int64:
		return v.Int64(), true
	case parquet.Boolean:
		if v.Boolean() {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func floatOf(v parquet.Value) (float64, bool) {
	switch v.Kind() {
	case parquet.Float:
		return float64(v.Float()), true
	case parquet.Double:
		return v.Double(), true
	}
	x, ok := intOf(v)
	return float64(x), ok
}
