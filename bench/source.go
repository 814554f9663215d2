package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/oxefs/oxefs/batch"
)

// Mount reads a mountpoint with plain file reads, as a trainer would.
type Mount struct {
	Dir string
	Val bool
}

var _ Source = Mount{}

func (m Mount) view() string {
	if m.Val {
		return filepath.Join(m.Dir, "val", "batches")
	}
	return filepath.Join(m.Dir, "batches")
}

// Name says what is read.
func (m Mount) Name() string { return "mount " + m.view() }

// Read reads batch n's .npy file whole (and its .json, if there is one).
func (m Mount) Read(ctx context.Context, n int64, buf []byte) ([]byte, []byte, error) {
	base := filepath.Join(m.view(), fmt.Sprintf("%06d", n))
	f, err := os.Open(base + ".npy")
	if err != nil {
		return buf, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return buf, nil, err
	}
	if int64(cap(buf)) < st.Size() {
		buf = make([]byte, st.Size())
	}
	buf = buf[:st.Size()]
	if _, err := io.ReadFull(f, buf); err != nil {
		return buf, nil, err
	}
	meta, err := os.ReadFile(base + ".json")
	if err != nil && !os.IsNotExist(err) {
		return buf, nil, err
	}
	return buf, meta, nil
}

// Info reads info.json, shaped like the train view for a val view.
func (m Mount) Info() []byte { return viewInfo(mustRead(filepath.Join(m.Dir, "info.json")), m.Val) }

// Stats reads stats.json.
func (m Mount) Stats() []byte { return mustRead(filepath.Join(m.Dir, "stats.json")) }

// CPU is the daemon's processor time (its pid from info.json; zero if it
// runs where /proc does not show it) and this process's.
func (m Mount) CPU() CPU {
	c := CPU{Reader: selfCPU()}
	if pid := daemonPID(mustRead(filepath.Join(m.Dir, "info.json"))); pid > 0 {
		c.Pipeline, _ = processCPU(pid)
	}
	return c
}

func mustRead(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		return []byte("{}")
	}
	return b
}

// InProcess reads batches straight from a pipeline's scheduler: the same
// plan, builds and readahead as a mount, without FUSE. A read copies the
// batch into the reader's buffer, as a file read does.
type InProcess struct {
	P    Pipeline
	Val  bool
	Desc string
}

// Pipeline is what InProcess reads from: the scheduler of each view (nil
// for a view the mix does not have) and the info.json and stats.json
// documents. The composition root's pipeline is one.
type Pipeline interface {
	View(val bool) *batch.Scheduler
	Info() []byte
	Stats() []byte
}

var _ Source = InProcess{}

// Name says what is read.
func (s InProcess) Name() string { return "in-process " + s.Desc }

func (s InProcess) sched() *batch.Scheduler { return s.P.View(s.Val) }

// Read gets batch n and copies its .npy bytes and metadata.
func (s InProcess) Read(ctx context.Context, n int64, buf []byte) ([]byte, []byte, error) {
	sched := s.sched()
	if sched == nil {
		return buf, nil, fmt.Errorf("%s has no validation view", s.Desc)
	}
	b, err := sched.Get(ctx, n)
	if err != nil {
		return buf, nil, err
	}
	defer b.Release()
	buf = buf[:0]
	for _, part := range b.NPY() {
		buf = append(buf, part...)
	}
	var meta []byte
	if m := b.Meta(); m != nil {
		meta = append([]byte(nil), m...)
	}
	return buf, meta, nil
}

// Info returns the pipeline's info.json.
func (s InProcess) Info() []byte { return viewInfo(s.P.Info(), s.Val) }

// Stats returns the pipeline's stats.json.
func (s InProcess) Stats() []byte { return s.P.Stats() }

// CPU is this process's processor time: the pipeline and its readers.
func (s InProcess) CPU() CPU { return CPU{Pipeline: selfCPU()} }
