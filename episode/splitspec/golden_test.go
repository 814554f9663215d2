package splitspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
)

// golden is testdata/split_golden.json: split strings resolved by TFDS 4.9
// itself. Regenerate with
//
//	cd testdata && python3 split_cases.py | python3 split_oracle.py > split_golden.json
type golden struct {
	Datasets map[string][][2]json.RawMessage `json:"datasets"`
	Cases    []struct {
		Dataset string  `json:"dataset"`
		Spec    string  `json:"spec"`
		Ranges  [][]any `json:"ranges"`
		Files   [][]any `json:"files"`
		Error   string  `json:"error"`
		// Slices with From > To that TFDS reads anyway; Resolve selects
		// nothing for them.
		InvertedButRead [][]any `json:"inverted_but_read"`
	} `json:"cases"`
}

func loadGolden(t *testing.T) (golden, map[string][]episode.Split) {
	t.Helper()
	b, err := os.ReadFile("testdata/split_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // shard lengths up to 2^63-1
	if err := dec.Decode(&g); err != nil {
		t.Fatal(err)
	}
	infos := map[string][]episode.Split{}
	for name, splits := range g.Datasets {
		for _, s := range splits {
			var sp episode.Split
			if err := json.Unmarshal(s[0], &sp.Name); err != nil {
				t.Fatalf("dataset %s: %v", name, err)
			}
			if err := json.Unmarshal(s[1], &sp.ShardEpisodes); err != nil {
				t.Fatalf("dataset %s: %v", name, err)
			}
			infos[name] = append(infos[name], sp)
		}
	}
	return g, infos
}

func TestResolveMatchesTFDS(t *testing.T) {
	g, infos := loadGolden(t)
	for _, c := range g.Cases {
		info := infos[c.Dataset]
		got, err := Resolve(c.Spec, info)
		name := c.Dataset + "/" + c.Spec
		if c.Error == "" && len(c.Ranges) == 0 {
			// Only inverted slices, which TFDS reads by accident (a
			// negative take within one shard): nothing, for Resolve.
			if !errors.Is(err, ErrEmptySplit) {
				t.Errorf("%q: Resolve = %v, %v; want ErrEmptySplit (TFDS reads %v)", name, got, err, c.InvertedButRead)
			}
			continue
		}
		if c.Error != "" {
			want := ErrInvalidSplit
			switch {
			case c.Error == "no data":
				want = ErrEmptySplit
			case strings.HasPrefix(c.Error, "ValueError: Unknown split"):
				want = ErrUnknownSplit
			}
			if !errors.Is(err, want) {
				t.Errorf("%q: Resolve = %v, %v; TFDS: %s (want %v)", name, got, err, c.Error, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: Resolve: %v; TFDS: %v", name, err, c.Ranges)
			continue
		}
		var want []episode.Range
		for _, r := range c.Ranges {
			want = append(want, episode.Range{Split: r[0].(string), From: num(t, r[1]), To: num(t, r[2])})
		}
		if !equalRanges(got, want) {
			t.Errorf("%q: Resolve = %v, TFDS %v", name, got, want)
		}
		var wantFiles []fileInstruction
		for _, f := range c.Files {
			wantFiles = append(wantFiles, fileInstruction{f[0].(string), int(num(t, f[1])), num(t, f[2]), num(t, f[3])})
		}
		if gotFiles := fileInstructions(info, got); !equalFiles(gotFiles, wantFiles) {
			t.Errorf("%q: file instructions = %v, TFDS %v", name, gotFiles, wantFiles)
		}
	}
}

func num(t *testing.T, v any) int64 {
	t.Helper()
	n, err := v.(json.Number).Int64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func equalRanges(a, b []episode.Range) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalFiles(a, b []fileInstruction) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fileInstruction is one shard read of TFDS's file_instructions: take
// records after skipping skip.
type fileInstruction struct {
	Split      string
	Shard      int
	Skip, Take int64
}

// fileInstructions turns ranges into per-shard reads through
// episode.Split.Locate, the way a reader walks them.
func fileInstructions(info []episode.Split, ranges []episode.Range) []fileInstruction {
	var out []fileInstruction
	for _, r := range ranges {
		s, _ := splitNamed(info, r.Split)
		for i := r.From; i < r.To; {
			shard, rec := s.Locate(i)
			take := min(s.ShardEpisodes[shard]-rec, r.To-i)
			out = append(out, fileInstruction{r.Split, shard, rec, take})
			i += take
		}
	}
	return out
}

func splitNamed(info []episode.Split, name string) (episode.Split, bool) {
	for _, s := range info {
		if s.Name == name {
			return s, true
		}
	}
	return episode.Split{}, false
}
