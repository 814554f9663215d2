package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strconv"
)

// Mount reads what an oxefs mount serves, and nothing else: its
// info.json and stats.json, and its batch files, through an os.Root, so
// no name can leave the mount.
type Mount struct {
	root *os.Root
	dir  string
}

// OpenMount opens the mount at dir. It checks that dir serves an
// info.json.
func OpenMount(dir string) (*Mount, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	if _, err := root.Stat("info.json"); err != nil {
		root.Close()
		return nil, fmt.Errorf("%s is not an oxefs mount (no info.json): %w", dir, err)
	}
	return &Mount{root: root, dir: dir}, nil
}

// Close releases the mount's directory.
func (m *Mount) Close() error { return m.root.Close() }

// Dir is the mount's path.
func (m *Mount) Dir() string { return m.dir }

// mountInfo is the part of info.json the viewer reads.
type mountInfo struct {
	BatchSize  int                    `json:"batch_size"`
	NumBatches int64                  `json:"num_batches"`
	Rank       *int                   `json:"rank"`
	Ranks      []int                  `json:"ranks"`
	World      int                    `json:"world"`
	ActionDim  int                    `json:"action_dim"`
	StateDim   int                    `json:"state_dim"`
	Frames     *framesInfo            `json:"frames"`
	Sample     *sampleInfo            `json:"sample"`
	Config     configInfo             `json:"config"`
	Datasets   map[string]datasetInfo `json:"datasets"`
	Train      *viewInfo              `json:"train"`
	Val        *viewInfo              `json:"val"`
	Files      []string               `json:"files"` // a batch's files after "NNNNNN.": pair mode's "npy", "augment.npy"
}

// steps says whether the mount serves step samples, with their
// description, or frame pairs: the one place the page asks which kind of
// sample the mount serves (internal/layers' TestOneFactory holds it to that).
func (i *mountInfo) steps() (*sampleInfo, bool) { return i.Sample, i.Sample != nil }

type framesInfo struct {
	Shape  []int  `json:"shape"`
	Layout string `json:"layout"`
	// JPEGSize names the file of the frames' JPEG sizes (decode: gpu).
	JPEGSize string `json:"jpeg_size"`
}

type sampleInfo struct {
	Slots []struct {
		Name   string `json:"name"`
		Size   []int  `json:"size"`
		Deltas []int  `json:"deltas"`
		// JPEGSize names the array of the slot's JPEG sizes (decode: gpu).
		JPEGSize string `json:"jpeg_size"`
	} `json:"slots"`
	StateDeltas  []int       `json:"state_deltas"`
	ActionDeltas []int       `json:"action_deltas"`
	Arrays       []arrayInfo `json:"arrays"`
}

type arrayInfo struct {
	Name  string `json:"name"`
	File  string `json:"file"`
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
}

type configInfo struct {
	Layout   string `json:"layout"`
	Resize   string `json:"resize"`
	Datasets []struct {
		Name     string `json:"name"`
		Source   string `json:"source"`
		Split    string `json:"split"`
		ValSplit string `json:"val_split"`
	} `json:"datasets"`
}

type datasetInfo struct {
	ActionDim    int  `json:"action_dim"`
	StateDim     int  `json:"state_dim"`
	DatasetIndex *int `json:"dataset_index"`
}

type viewInfo struct {
	NumBatches int64 `json:"num_batches"`
	Plan       struct {
		Datasets []planDataset `json:"datasets"`
	} `json:"plan"`
}

type planDataset struct {
	Name               string  `json:"name"`
	Source             string  `json:"source"`
	Split              string  `json:"split"`
	Weight             float64 `json:"weight"`
	WeightGiven        string  `json:"weight_given"`
	SamplesPerBatch    float64 `json:"samples_per_batch"`
	Episodes           *int64  `json:"episodes"`
	SampleUnits        *int64  `json:"sample_units"`
	EpisodesTooShort   any     `json:"episodes_too_short"`
	EpisodesUnreadable any     `json:"episodes_unreadable"`
}

// mountStats is the part of stats.json the viewer reads.
type mountStats struct {
	SamplesPerDataset    map[string]int64  `json:"samples_per_dataset"`
	Substitutions        map[string]int64  `json:"substitutions"`
	BadEpisodes          []badEpisode      `json:"bad_episodes"`
	UnusableDatasets     map[string]string `json:"unusable_datasets"`
	ValSamplesPerDataset map[string]int64  `json:"val_samples_per_dataset"`
	ValSubstitutions     map[string]int64  `json:"val_substitutions"`
	ValBadEpisodes       []badEpisode      `json:"val_bad_episodes"`
}

type badEpisode struct {
	Episode string `json:"episode"`
	Reason  string `json:"reason"`
}

// rankDir is one rank's directory of the mount: the top, or rank/R/ on a
// mount of several ranks.
type rankDir struct {
	Rank   int
	prefix string // "" or "rank/R/"
	info   mountInfo
	raw    []byte // its info.json
}

// errBadRequest marks an error that is the request's fault: a 400;
// errNotFound one for what this page does not have: a 404.
var (
	errBadRequest = errors.New("bad request")
	errNotFound   = errors.New("not here")
)

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}

// readFile reads a small file of the mount (info.json, stats.json, a
// batch's .json), at most 64 MiB.
func (m *Mount) readFile(name string) ([]byte, error) {
	f, err := m.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 64<<20))
}

// rank returns the rank directory that q names ("" for the mount's own).
func (m *Mount) rank(q string) (rankDir, error) {
	top, err := m.readFile("info.json")
	if err != nil {
		return rankDir{}, err
	}
	var in mountInfo
	if err := json.Unmarshal(top, &in); err != nil {
		return rankDir{}, fmt.Errorf("info.json: %w", err)
	}
	want := -1
	if q != "" {
		r, err := strconv.Atoi(q)
		if err != nil || r < 0 {
			return rankDir{}, badRequest("rank %q is not a rank number", q)
		}
		want = r
	}
	if len(in.Ranks) == 0 { // one rank at the top
		own := 0
		if in.Rank != nil {
			own = *in.Rank
		}
		if want >= 0 && want != own {
			return rankDir{}, badRequest("rank %d: this mount serves rank %d", want, own)
		}
		return rankDir{Rank: own, info: in, raw: top}, nil
	}
	if want < 0 {
		want = in.Ranks[0]
	}
	if !slices.Contains(in.Ranks, want) {
		return rankDir{}, badRequest("rank %d: this mount serves ranks %v", want, in.Ranks)
	}
	prefix := "rank/" + strconv.Itoa(want) + "/"
	raw, err := m.readFile(prefix + "info.json")
	if err != nil {
		return rankDir{}, err
	}
	var rin mountInfo
	if err := json.Unmarshal(raw, &rin); err != nil {
		return rankDir{}, fmt.Errorf("%sinfo.json: %w", prefix, err)
	}
	rin.Ranks = in.Ranks
	return rankDir{Rank: want, prefix: prefix, info: rin, raw: raw}, nil
}

// stats reads the rank's stats.json; on a mount of several ranks the
// samples and substitutions are the daemon's, in the top one.
func (m *Mount) stats(r rankDir) (mountStats, []byte, error) {
	name := "stats.json"
	raw, err := m.readFile(name)
	if err != nil {
		return mountStats{}, nil, err
	}
	var s mountStats
	if err := json.Unmarshal(raw, &s); err != nil {
		return mountStats{}, nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, raw, nil
}

// batchDir is the directory of a view's batches in r.
func (r rankDir) batchDir(view string) (string, *viewInfo, error) {
	switch view {
	case "", "train":
		return r.prefix + "batches/", r.info.Train, nil
	case "val":
		if r.info.Val == nil {
			return "", nil, badRequest("view val: this mount has no val view (no dataset names a val_split)")
		}
		return r.prefix + "val/batches/", r.info.Val, nil
	}
	return "", nil, badRequest("view %q: train or val", view)
}

// batchName is batch n's file stem: at least 6 digits.
func batchName(n int64) string { return fmt.Sprintf("%06d", n) }

// safeArrayFile is the form of the array file names info.json lists; a
// name of any other form is not read.
var safeArrayFile = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.]*\.npy$`)

// openArray opens an array file of a batch and reads its header.
func (m *Mount) openArray(name string) (*os.File, npyArray, error) {
	f, err := m.root.Open(name)
	if err != nil {
		return nil, npyArray{}, err
	}
	a, err := readNPYHeader(f)
	if err != nil {
		f.Close()
		return nil, npyArray{}, fmt.Errorf("%s: %w", name, err)
	}
	return f, a, nil
}

// isNotExist reports a missing file of the mount.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
