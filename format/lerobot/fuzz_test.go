package lerobot

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzParseInfo: no meta/info.json makes ParseInfo panic, and what it
// accepts is consistent: splits within total_episodes, features sorted
// and unique, cameras with three dimensions.
func FuzzParseInfo(f *testing.F) {
	for _, name := range []string{"lerobot_av1", "lerobot_h264"} {
		b, err := os.ReadFile(filepath.Join(fixtures, name, InfoPath))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"codebase_version":"v3.0","total_episodes":2,"fps":10,"data_path":"d/{chunk_index}.parquet","splits":{"train":"0:2"},"features":{"a":{"dtype":"float32","shape":[2]}}}`))
	f.Add([]byte(`{"codebase_version":"v2.1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ParseInfo(b)
		if err != nil {
			return
		}
		for _, s := range in.Splits {
			if s.From < 0 || s.To < s.From || s.To > in.Episodes {
				t.Fatalf("split %+v outside %d episodes", s, in.Episodes)
			}
		}
		if !slices.IsSortedFunc(in.Features, func(a, b Feature) int { return strings.Compare(a.Key, b.Key) }) {
			t.Fatal("features not sorted")
		}
		for _, f := range in.Features {
			if (f.IsVideo() || f.IsImage()) && len(f.Shape) != 3 {
				t.Fatalf("camera %s with shape %v", f.Key, f.Shape)
			}
		}
	})
}

// FuzzFilePath: a path template never panics, and a template without
// fields comes back as it is.
func FuzzFilePath(f *testing.F) {
	f.Add("data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet", int64(1), int64(12), "")
	f.Add("videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4", int64(0), int64(0), "observation.images.top")
	f.Add("{{}}{", int64(-1), int64(5), "x")
	f.Fuzz(func(t *testing.T, tmpl string, chunk, file int64, key string) {
		got, err := FilePath(tmpl, chunk, file, key)
		if err == nil && !strings.ContainsAny(tmpl, "{}") && got != tmpl {
			t.Fatalf("FilePath(%q) = %q", tmpl, got)
		}
	})
}

// FuzzTable: a parquet file of any bytes gives errors, never a panic, from
// opening it and reading every column every way.
func FuzzTable(f *testing.F) {
	for _, p := range []string{
		"lerobot_h264/meta/tasks.parquet",
		"lerobot_h264/meta/episodes/chunk-000/file-000.parquet",
		"lerobot_av1/data/chunk-000/file-002.parquet",
	} {
		b, err := os.ReadFile(filepath.Join(fixtures, p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tb, err := openTable("fuzz.parquet", bytesReaderAt(b), int64(len(b)))
		if err != nil {
			return
		}
		n := min(tb.rows(), 1<<12)
		for _, path := range tb.f.Schema().Columns() {
			c, err := tb.column(path...)
			if err != nil {
				continue
			}
			_, _ = c.int64s(0, n)
			_, _ = c.float64s(0, n, 2)
			_, _ = c.bytes(0, n)
		}
	})
}
