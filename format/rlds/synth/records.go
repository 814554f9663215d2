package synth

import (
	"bufio"
	"io"

	"github.com/oxefs/oxefs/format/rlds/tfrecord"
)

// recordWriter frames episodes as TFRecords through a buffer and counts
// the bytes written.
type recordWriter struct {
	buf *bufio.Writer
	rec *tfrecord.Writer
	n   countingWriter
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func newRecordWriter(w io.Writer) *recordWriter {
	rw := &recordWriter{n: countingWriter{w: w}}
	rw.buf = bufio.NewWriterSize(&rw.n, 1<<20)
	rw.rec = tfrecord.NewWriter(rw.buf)
	return rw
}

func (w *recordWriter) write(data []byte) error { return w.rec.Write(data) }

// close flushes the buffer and returns the bytes written in all.
func (w *recordWriter) close() (int64, error) {
	err := w.buf.Flush()
	return w.n.n, err
}
