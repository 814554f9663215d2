package testkit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/oxefs/oxefs/format/lerobot/mp4"
)

// LeRobotDataFile is the first data file of lerobot_av1.
const LeRobotDataFile = "data/chunk-000/file-000.parquet"

// LeRobotTopVideo is the first video file of lerobot_av1's top camera.
const LeRobotTopVideo = "videos/observation.images.top/chunk-000/file-000.mp4"

// LeRobotOrphanRow copies lerobot_av1 and appends to its first data file a
// copy of the file's last row whose episode_index is episode (and whose
// index is the row's position): a row no episode owns when episode is not
// one of the file's, or one too many for the episode when it is. It
// returns the copy's root.
func LeRobotOrphanRow(t testing.TB, episode int64) string {
	t.Helper()
	dir := CopyDir(t, filepath.Join(Testdata(t), "lerobot", "lerobot_av1"))
	path := filepath.Join(dir, LeRobotDataFile)
	pf, rows := readParquetRows(t, path)
	extra := rows[len(rows)-1].Clone()
	for _, name := range []string{"episode_index", "index"} {
		col, ok := pf.Schema().Lookup(name)
		if !ok {
			t.Fatalf("%s has no %s column", path, name)
		}
		k := at(t, extra, col.ColumnIndex)
		v := episode
		if name == "index" {
			v = extra[k].Int64() + 1
		}
		extra[k] = parquet.Int64Value(v).Level(extra[k].RepetitionLevel(), extra[k].DefinitionLevel(), col.ColumnIndex)
	}
	writeParquetRows(t, path, pf.Schema(), append(rows, extra))
	return dir
}

// at is where a flat row holds the value of column col.
func at(t testing.TB, row parquet.Row, col int) int {
	t.Helper()
	for k, v := range row {
		if v.Column() == col {
			return k
		}
	}
	t.Fatalf("a row without column %d", col)
	return -1
}

func readParquetRows(t testing.TB, path string) (*parquet.File, []parquet.Row) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]parquet.Row, pf.NumRows())
	r := parquet.NewReader(pf)
	if n, err := r.ReadRows(rows); n != len(rows) {
		t.Fatalf("%s: read %d of %d rows: %v", path, n, len(rows), err)
	}
	return pf, rows
}

func writeParquetRows(t testing.TB, path string, schema *parquet.Schema, rows []parquet.Row) {
	t.Helper()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewWriter(out, schema)
	if _, err := w.WriteRows(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// LeRobotDroppedFrame copies lerobot_av1 and rewrites its top camera's
// first video file without sample drop (in decode order), the others'
// bytes and times as they were: a frame lost between encoder and muxer.
// With retime, the samples after it come 1/fps earlier, so that the
// file's times run on without a gap and only its frame count tells. It
// returns the copy's root.
func LeRobotDroppedFrame(t testing.TB, drop int, retime bool) string {
	t.Helper()
	dir := CopyDir(t, filepath.Join(Testdata(t), "lerobot", "lerobot_av1"))
	path := filepath.Join(dir, LeRobotTopVideo)
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		t.Fatal(err)
	}
	f, err := mp4.Parse(in, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	tr := f.Tracks[0]
	if drop <= 0 || drop >= len(tr.Samples)-1 {
		t.Fatalf("%s: dropping sample %d of %d is not in the middle", path, drop, len(tr.Samples))
	}
	dur := tr.Samples[1].DTS - tr.Samples[0].DTS
	var kept []mp4.WriteSample
	for j, s := range tr.Samples {
		if j == drop {
			continue
		}
		b := make([]byte, s.Size)
		if _, err := in.ReadAt(b, s.Offset); err != nil {
			t.Fatal(err)
		}
		ws := mp4.WriteSample{Data: b, DTS: s.DTS, PTS: s.PTS, Key: s.Key}
		if retime && j > drop {
			ws.DTS, ws.PTS = ws.DTS-dur, ws.PTS-dur
		}
		kept = append(kept, ws)
	}
	out, err := os.Create(path + ".new")
	if err != nil {
		t.Fatal(err)
	}
	w, err := mp4.NewWriter(out, mp4.TrackConfig{Codec: tr.Codec, Config: tr.Config, Width: tr.Width, Height: tr.Height, Timescale: tr.Timescale})
	if err != nil {
		t.Fatal(err)
	}
	// The writer's decode times are the running sum of the durations.
	for i := range kept {
		kept[i].Duration = uint32(dur)
		if i+1 < len(kept) {
			kept[i].Duration = uint32(kept[i+1].DTS - kept[i].DTS)
		}
		if err := w.Write(kept[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	return dir
}
