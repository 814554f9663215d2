package tfds

import (
	"os"
	"strings"
	"testing"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testdata/bridge_dataset_info.json and legacy_dataset_info.json were written
// by TFDS's own json_format.MessageToJson(DatasetInfo proto, sort_keys=True),
// as DatasetInfo.write_to_directory does, from made-up shard lengths.
func TestParseDatasetInfoBridge(t *testing.T) {
	d, err := ParseDatasetInfo(readFixture(t, "bridge_dataset_info.json"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "bridge" || d.Version != "0.1.0" || d.FileFormat != "tfrecord" {
		t.Errorf("got name %q version %q format %q", d.Name, d.Version, d.FileFormat)
	}
	if got := strings.Join(d.SplitNames(), ","); got != "train,test" {
		t.Errorf("splits %s, want train,test", got)
	}
	for _, tc := range []struct {
		split    string
		examples int64
		shards   int
		bytes    int64
		first    string
		last     string
	}{
		{"train", 25460, 1024, 387242031925, "bridge-train.tfrecord-00000-of-01024", "bridge-train.tfrecord-01023-of-01024"},
		{"test", 3475, 128, 43232810021, "bridge-test.tfrecord-00000-of-00128", "bridge-test.tfrecord-00127-of-00128"},
	} {
		t.Run(tc.split, func(t *testing.T) {
			s, ok := d.Split(tc.split)
			if !ok {
				t.Fatalf("no split %s", tc.split)
			}
			if s.NumExamples() != tc.examples || len(s.ShardLengths) != tc.shards || s.NumBytes != tc.bytes {
				t.Errorf("examples %d shards %d bytes %d, want %d %d %d", s.NumExamples(), len(s.ShardLengths), s.NumBytes, tc.examples, tc.shards, tc.bytes)
			}
			names, err := d.ShardNames(tc.split)
			if err != nil {
				t.Fatal(err)
			}
			if len(names) != tc.shards || names[0] != tc.first || names[len(names)-1] != tc.last {
				t.Errorf("names %d: %s .. %s", len(names), names[0], names[len(names)-1])
			}
		})
	}
	if _, ok := d.Split("val"); ok {
		t.Error(`Split("val") found a split`)
	}
}

func TestParseDatasetInfoDefaults(t *testing.T) {
	d, err := ParseDatasetInfo(readFixture(t, "legacy_dataset_info.json"))
	if err != nil {
		t.Fatal(err)
	}
	if d.FileFormat != DefaultFileFormat {
		t.Errorf("FileFormat %q, want %q", d.FileFormat, DefaultFileFormat)
	}
	s, _ := d.Split("train")
	if s.FilepathTemplate != DefaultTemplate {
		t.Errorf("FilepathTemplate %q, want the default", s.FilepathTemplate)
	}
	names, err := d.ShardNames("train")
	if err != nil {
		t.Fatal(err)
	}
	want := "legacy_robot-train.tfrecord-00000-of-00003 legacy_robot-train.tfrecord-00001-of-00003 legacy_robot-train.tfrecord-00002-of-00003"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("names %s\nwant %s", got, want)
	}
	if _, err := d.ShardNames("test"); err == nil || !strings.Contains(err.Error(), "valid: train, validation") {
		t.Errorf("ShardNames(test) error %v, want one naming the splits", err)
	}
}

// The expected names come from TFDS itself:
//
//	from tensorflow_datasets.core import naming
//	t = naming.ShardedFileTemplate(data_dir='/d', template=TEMPLATE,
//	    dataset_name=DATASET, split=SPLIT, filetype_suffix=FORMAT)
//	[t.relative_filepath(shard_index=i, num_shards=N) for i in range(N)]
func TestShardNames(t *testing.T) {
	for _, tc := range []struct {
		name, template, dataset, split, format string
		shards                                 int
		first, last                            string
	}{
		{"default", "", "bridge", "train", "tfrecord", 1024, "bridge-train.tfrecord-00000-of-01024", "bridge-train.tfrecord-01023-of-01024"},
		{"explicit default", DefaultTemplate, "fractal20220817_data", "train", "tfrecord", 3, "fractal20220817_data-train.tfrecord-00000-of-00003", "fractal20220817_data-train.tfrecord-00002-of-00003"},
		{"six digits", DefaultTemplate, "ds", "val", "array_record", 100000, "ds-val.array_record-000000-of-100000", "ds-val.array_record-099999-of-100000"},
		{"six digits odd", DefaultTemplate, "ds", "test", "tfrecord", 123456, "ds-test.tfrecord-000000-of-123456", "ds-test.tfrecord-123455-of-123456"},
		{"subdirectory", "{SPLIT}/{DATASET}-{SHARD_INDEX}.{FILEFORMAT}", "ds", "train", "tfrecord", 2, "train/ds-00000.tfrecord", "train/ds-00001.tfrecord"},
		{"num shards", "{DATASET}-{SPLIT}@{NUM_SHARDS}.{FILEFORMAT}-{SHARD_INDEX}", "ds", "train", "riegeli", 2, "ds-train@00002.riegeli-00000", "ds-train@00002.riegeli-00001"},
		{"escaped braces", "{{literal}}-{SPLIT}-{SHARD_INDEX}", "ds", "train", "tfrecord", 1, "{literal}-train-00000", "{literal}-train-00000"},
		{"no dataset", "data-{SHARD_X_OF_Y}", "", "train", "tfrecord", 1, "data-00000-of-00001", "data-00000-of-00001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &DatasetInfo{Name: tc.dataset, FileFormat: tc.format, Splits: []SplitInfo{{
				Name: tc.split, ShardLengths: make([]int64, tc.shards), FilepathTemplate: tc.template,
			}}}
			names, err := d.ShardNames(tc.split)
			if err != nil {
				t.Fatal(err)
			}
			if len(names) != tc.shards || names[0] != tc.first || names[len(names)-1] != tc.last {
				t.Errorf("got %d names %q .. %q, want %d %q .. %q", len(names), names[0], names[len(names)-1], tc.shards, tc.first, tc.last)
			}
		})
	}
}

func TestParseDatasetInfoErrors(t *testing.T) {
	for _, tc := range []struct {
		name, json, want string
	}{
		{"not json", `{`, "dataset_info.json"},
		{"splits not a list", `{"splits": 3}`, "dataset_info.json"},
		{"negative shard", `{"name":"d","splits":[{"name":"train","shardLengths":["3","-1"]}]}`, "negative length"},
		{"overflow", `{"name":"d","splits":[{"name":"train","shardLengths":["9223372036854775807","1"]}]}`, "overflow"},
		{"bad int64", `{"name":"d","splits":[{"name":"train","shardLengths":["1.5"]}]}`, "bad int64"},
		{"fractional number", `{"name":"d","splits":[{"name":"train","shardLengths":[1.5]}]}`, "bad int64"},
		{"spaced int64", `{"name":"d","splits":[{"name":"train","shardLengths":[" 1"]}]}`, "bad int64"},
		{"duplicate split", `{"name":"d","splits":[{"name":"train"},{"name":"train"}]}`, `split "train" listed twice`},
		{"empty split name", `{"name":"d","splits":[{"name":""}]}`, "empty name"},
		{"no alphanumeric", `{"name":"d","splits":[{"name":"__"}]}`, "no letter or digit"},
		{"unknown variable", `{"name":"d","splits":[{"name":"train","filepathTemplate":"{DATASET}-{SHARD}"}]}`, "unknown variable {SHARD}"},
		{"positional field", `{"name":"d","splits":[{"name":"train","filepathTemplate":"{}-{SPLIT}"}]}`, "unsupported field {}"},
		{"format spec", `{"name":"d","splits":[{"name":"train","filepathTemplate":"{SPLIT:>8}"}]}`, "unsupported field {SPLIT:>8}"},
		{"unclosed brace", `{"name":"d","splits":[{"name":"train","filepathTemplate":"{SPLIT"}]}`, "unclosed '{'"},
		{"single closing brace", `{"name":"d","splits":[{"name":"train","filepathTemplate":"x}"}]}`, "single '}'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseDatasetInfo([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseDatasetInfo = %+v, %v; want an error containing %q", d, err, tc.want)
			}
		})
	}
}

func TestParseDatasetInfoInt64Forms(t *testing.T) {
	// Proto-JSON int64: TFDS writes strings, other writers numbers.
	d, err := ParseDatasetInfo([]byte(`{"name":"d","splits":[{"name":"train","numBytes":1e3,"shardLengths":[2,"3",4.0,null]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := d.Splits[0]
	if s.NumBytes != 1000 || s.NumExamples() != 9 || len(s.ShardLengths) != 4 {
		t.Errorf("got %+v", s)
	}
}

func TestShardNamesNeedsDatasetName(t *testing.T) {
	d, err := ParseDatasetInfo([]byte(`{"splits":[{"name":"train","shardLengths":["1"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.ShardNames("train"); err == nil || !strings.Contains(err.Error(), "no name") {
		t.Errorf("ShardNames error %v, want one about the missing dataset name", err)
	}
}

// Expected from TFDS: for each i, the single file instruction of
// SplitDict[f'train[{i}:{i+1}]'] over shard lengths [3, 0, 4, 0, 0, 5, 2]
// names the shard, and its skip is the record.
func TestLocate(t *testing.T) {
	d, err := ParseDatasetInfo([]byte(`{"name":"d","splits":[{"name":"train","shardLengths":["3","0","4","0","0","5","2"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := [][3]int64{{0, 0, 0}, {1, 0, 1}, {2, 0, 2}, {3, 2, 0}, {4, 2, 1}, {5, 2, 2}, {6, 2, 3}, {7, 5, 0}, {8, 5, 1}, {9, 5, 2}, {10, 5, 3}, {11, 5, 4}, {12, 6, 0}, {13, 6, 1}}
	hand := SplitInfo{Name: "train", ShardLengths: []int64{3, 0, 4, 0, 0, 5, 2}} // offsets computed on the fly
	for _, s := range []*SplitInfo{&d.Splits[0], &hand} {
		for _, w := range want {
			if shard, rec := s.Locate(w[0]); int64(shard) != w[1] || rec != w[2] {
				t.Errorf("Locate(%d) = %d, %d; want %d, %d", w[0], shard, rec, w[1], w[2])
			}
		}
		for _, i := range []int64{-1, 14, 1 << 62} {
			if shard, rec := s.Locate(i); shard != -1 || rec != -1 {
				t.Errorf("Locate(%d) = %d, %d; want -1, -1", i, shard, rec)
			}
		}
	}
	var empty SplitInfo
	if shard, rec := empty.Locate(0); shard != -1 || rec != -1 || empty.NumExamples() != 0 {
		t.Errorf("empty split: Locate(0) = %d, %d", shard, rec)
	}
}
