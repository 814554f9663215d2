package synth

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/oxefs/oxefs/format/lerobot"
)

// dataPath is LeRobot's data_path template.
const dataPath = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"

// int64Leaf and floatLeaf are the plain columns pyarrow writes for int64
// and float32.
var (
	int64Leaf = parquet.Leaf(parquet.Int64Type)
	floatLeaf = parquet.Leaf(parquet.FloatType)
)

// dataSchema is the data files' schema: the columns LeRobot writes for the
// dataset's features.
func (p *dataset) dataSchema() *parquet.Schema {
	g := parquet.Group{
		"action":        parquet.List(floatLeaf),
		"timestamp":     floatLeaf,
		"frame_index":   int64Leaf,
		"episode_index": int64Leaf,
		"index":         int64Leaf,
		"task_index":    int64Leaf,
	}
	if p.Dataset.State.Key != "" {
		g["observation.state"] = parquet.List(floatLeaf)
	}
	return parquet.NewSchema("schema", g)
}

// dataFile is the data file being written.
type dataFile struct {
	f     *os.File
	w     *parquet.Writer
	size  int64 // once closed
	index int64
	rows  int64 // rows written
}

// writeData writes every episode's rows, in order, into the data files,
// one row group per episode, rolling over as LeRobot does; it also
// assigns the task indices and records each episode's content.
func (p *dataset) writeData(ctx context.Context, o Options) (err error) {
	schema := p.dataSchema()
	col := func(path ...string) int {
		leaf, ok := schema.Lookup(path...)
		if !ok {
			panic(fmt.Sprintf("synth: no column %v in the data schema", path))
		}
		return leaf.ColumnIndex
	}
	hasState := p.Dataset.State.Key != ""
	cAction, cTS, cFrame, cEp, cIndex, cTask := col("action", "list", "element"), col("timestamp"), col("frame_index"), col("episode_index"), col("index"), col("task_index")
	cState := -1
	if hasState {
		cState = col("observation.state", "list", "element")
	}
	b := parquet.NewRowBuilder(schema)
	tasks := map[string]int{}
	var cur *dataFile
	defer func() {
		if cur != nil && err != nil {
			cur.f.Close()
		}
	}()
	var global, written int64
	p.Episodes = make([]EpisodeResult, len(p.episodes))
	p.rows = make([]lerobot.EpisodeMeta, len(p.episodes))
	for e := range p.episodes {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := p.content(o, e)
		task, ok := tasks[c.Instruction]
		if !ok {
			task = len(p.Tasks)
			tasks[c.Instruction] = task
			p.Tasks = append(p.Tasks, c.Instruction)
		}
		p.Episodes[e] = EpisodeResult{Split: c.Split, Index: c.Index, Steps: c.Steps, Task: task, Actions: c.Actions, State: c.State}
		n := int64(c.Steps)
		// LeRobot: a new file when the current size (Size: the bytes
		// written and those buffered) plus the episode at
		// the file's bytes per row would reach the limit.
		next := int64(0)
		if cur != nil && cur.w.Size()+cur.w.Size()*n/cur.rows >= o.DataFileBytes {
			if err := cur.close(); err != nil {
				return err
			}
			written += cur.size
			cur, next = nil, cur.index+1
		}
		if cur == nil {
			if cur, err = openDataFile(p.Dir, next, schema); err != nil {
				return err
			}
		}
		rows := make([]parquet.Row, 0, n)
		for s := range c.Steps {
			b.Reset()
			for _, v := range c.Actions[s] {
				b.Add(cAction, parquet.FloatValue(v))
			}
			if hasState {
				for _, v := range c.State[s] {
					b.Add(cState, parquet.FloatValue(v))
				}
			}
			// LeRobot's timestamp: frame_index / fps, as float32.
			b.Add(cTS, parquet.FloatValue(float32(s)/FPS))
			b.Add(cFrame, parquet.Int64Value(int64(s)))
			b.Add(cEp, parquet.Int64Value(int64(e)))
			b.Add(cIndex, parquet.Int64Value(global+int64(s)))
			b.Add(cTask, parquet.Int64Value(int64(task)))
			rows = append(rows, b.Row())
		}
		if _, err := cur.w.WriteRows(rows); err != nil {
			return fmt.Errorf("synth: %s: %w", cur.f.Name(), err)
		}
		if err := cur.w.Flush(); err != nil {
			return fmt.Errorf("synth: %s: %w", cur.f.Name(), err)
		}
		p.rows[e] = lerobot.EpisodeMeta{Index: int64(e), Length: n, DataChunk: 0, DataFile: cur.index, From: global, To: global + n}
		cur.rows += n
		global += n
		p.done(o, e, 0)
	}
	if cur != nil {
		if err := cur.close(); err != nil {
			return err
		}
		written += cur.size
	}
	p.dataBytes = written
	return nil
}

func openDataFile(dir string, index int64, schema *parquet.Schema) (*dataFile, error) {
	name, err := lerobot.FilePath(dataPath, 0, index, "")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("synth: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("synth: %w", err)
	}
	w := parquet.NewWriter(f, schema, parquet.Compression(&parquet.Snappy), parquet.CreatedBy("oxefs synth", "", ""))
	return &dataFile{f: f, w: w, index: index}, nil
}

func (d *dataFile) close() error {
	if err := d.w.Close(); err != nil {
		d.f.Close()
		return fmt.Errorf("synth: %s: %w", d.f.Name(), err)
	}
	info, err := d.f.Stat()
	if err != nil {
		d.f.Close()
		return fmt.Errorf("synth: %w", err)
	}
	d.size = info.Size()
	if err := d.f.Close(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}
