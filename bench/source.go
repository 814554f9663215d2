package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/oxefs/oxefs/batch"
)

// Mount reads a mountpoint with plain file reads, as a trainer would: each
// batch's .npy file or, on a step-sample mount, every array's file (as
// info.json's sample.arrays lists them), and its .json when there is one.
// Make it with NewMount.
type Mount struct {
	Dir string
	Val bool
	// suffixes name a batch's array files after its index: [".npy"], or
	// [".action.npy", ...] on a step-sample mount.
	suffixes []string
}

var _ Source = Mount{}

// NewMount reads dir's info.json to learn what files a batch has.
func NewMount(dir string, val bool) (Mount, error) {
	info, err := os.ReadFile(filepath.Join(dir, "info.json"))
	if err != nil {
		return Mount{}, fmt.Errorf("%s is not an oxefs mount (no info.json): %w", dir, err)
	}
	if err := rankRoot(dir, info); err != nil {
		return Mount{}, err
	}
	files, err := arrayFiles(info)
	if err != nil {
		return Mount{}, fmt.Errorf("%s: %w", filepath.Join(dir, "info.json"), err)
	}
	m := Mount{Dir: dir, Val: val}
	for _, f := range files {
		m.suffixes = append(m.suffixes, "."+f)
	}
	return m, nil
}

// rankRoot refuses the top of a --ranks mount, whose info.json lists the
// ranks served and which holds no batches of its own: it names the rank
// directories to read instead.
func rankRoot(dir string, info []byte) error {
	var doc struct {
		Ranks []int `json:"ranks"`
		World int   `json:"world"`
	}
	if json.Unmarshal(info, &doc) != nil || len(doc.Ranks) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "batches")); err == nil {
		return nil
	}
	return fmt.Errorf("%s serves ranks %s of world %d (mounted with --ranks), each under rank/R/: bench one rank, e.g. oxefs bench %s",
		dir, rankList(doc.Ranks), doc.World, filepath.Join(dir, "rank", fmt.Sprint(doc.Ranks[0])))
}

// rankList writes ranks as "0-7" or "0, 2, 4": a run of consecutive ranks
// as a range.
func rankList(ranks []int) string {
	consecutive := true
	for i := 1; i < len(ranks); i++ {
		consecutive = consecutive && ranks[i] == ranks[i-1]+1
	}
	if consecutive && len(ranks) > 2 {
		return fmt.Sprintf("%d-%d", ranks[0], ranks[len(ranks)-1])
	}
	parts := make([]string, len(ranks))
	for i, r := range ranks {
		parts[i] = fmt.Sprint(r)
	}
	return strings.Join(parts, ", ")
}

// arrayFiles returns the files of a batch after "NNNNNN.", as info.json's
// files lists them: "npy" on a pair mount, each array's file on a
// step-sample mount.
func arrayFiles(info []byte) ([]string, error) {
	var doc struct {
		Files []string `json:"files"`
	}
	if err := json.Unmarshal(info, &doc); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if len(doc.Files) == 0 {
		return nil, errors.New(`"files" lists no batch files: a mount lists the files of a batch after NNNNNN. (npy, or each array's file)`)
	}
	for _, f := range doc.Files {
		if f == "" || f != filepath.Base(f) || f == "." || f == ".." {
			return nil, fmt.Errorf("files: %q is not a file name (as \"action.npy\")", f)
		}
	}
	return doc.Files, nil
}

func (m Mount) view() string {
	if m.Val {
		return filepath.Join(m.Dir, "val", "batches")
	}
	return filepath.Join(m.Dir, "batches")
}

// Name says what is read.
func (m Mount) Name() string { return "mount " + m.view() }

// Read reads batch n's array files whole, one after the other into buf,
// and its .json, if there is one.
func (m Mount) Read(ctx context.Context, n int64, buf []byte) ([]byte, []byte, error) {
	if len(m.suffixes) == 0 {
		return buf, nil, errors.New("bench.Mount made without NewMount: it does not know a batch's files")
	}
	base := filepath.Join(m.view(), fmt.Sprintf("%06d", n))
	buf = buf[:0]
	for _, suffix := range m.suffixes {
		var err error
		if buf, err = readFileTo(base+suffix, buf); err != nil {
			return buf, nil, err
		}
	}
	meta, err := os.ReadFile(base + ".json")
	if err != nil && !os.IsNotExist(err) {
		return buf, nil, err
	}
	return buf, meta, nil
}

// readFileTo appends the file at path to buf, growing it to the file's
// size at most once.
func readFileTo(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return buf, err
	}
	end := len(buf) + int(st.Size())
	if cap(buf) < end {
		buf = append(make([]byte, 0, end), buf...)
	}
	if _, err := io.ReadFull(f, buf[len(buf):end]); err != nil {
		return buf, fmt.Errorf("%s: %w", path, err)
	}
	return buf[:end], nil
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
