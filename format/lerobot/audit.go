package lerobot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strings"

	"github.com/oxefs/oxefs/episode"
)

// Kinds of Finding.
const (
	// OrphanRow: a row of a data file that no episode of meta/episodes
	// owns.
	OrphanRow = "orphaned_row"
	// VideoFrames: a video file whose frames disagree with the episode
	// table: fewer or more than the rows of its episodes, or a gap in
	// their presentation times.
	VideoFrames = "frame_count"
)

// Finding is a defect of a whole file, which loading each episode does
// not see.
type Finding struct {
	Kind string
	// File is the data or video file, relative to the dataset's root.
	File string
	// Episode is the LeRobot index of the episode the defect lies in, or
	// -1 when it lies in none.
	Episode int64
	Detail  string
}

// Audit checks the files that hold the episodes of ranges as wholes:
//
//   - Orphaned rows. LeRobot reads the data files as one table, in path
//     order, and an episode's rows are the positions [dataset_from_index,
//     dataset_to_index) of that table (LeRobotDataset.__getitem__ and its
//     delta-timestamp queries index it so). A row is orphaned when no
//     episode of meta/episodes owns it: its episode_index names no
//     episode of the table, or an episode the table places in another
//     data file, or an episode that already has its length's rows in this
//     file. Rows an episode's range covers but that carry another
//     episode's index are the episode's own defect (its load refuses it),
//     not orphans. An orphaned row also moves every later row of the
//     table, as LeRobot reads it, off its episode's range; oxefs reads each
//     file from its first episode's row and is not misled.
//   - Video frame counts. Episodes are stored one after another in a
//     camera's video file, each with one frame per row, so a file has as
//     many frames as the rows of the episodes the table puts in it, one
//     every 1/fps. A file with fewer or more is reported, and so is each
//     gap in the frames' presentation times (a frame dropped with the
//     others keeping their times), naming the episode and step it falls
//     in.
//
// Only the cameras the dataset reads (UseCameras) are audited. A file
// that cannot be read at all is left to the episode loads, which report
// it. Findings are in file order.
func (d *Dataset) Audit(ctx context.Context, ranges []episode.Range) ([]Finding, error) {
	sel := map[int64]bool{}
	for _, r := range ranges {
		s, ok := d.Meta.Split(r.Split)
		if !ok || r.From < 0 || r.To > s.To-s.From || r.From > r.To {
			return nil, fmt.Errorf("dataset %s: no episodes %s[%d:%d]", d.Name, r.Split, r.From, r.To)
		}
		for i := s.From + r.From; i < s.From+r.To; i++ {
			sel[i] = true
		}
	}
	var out []Finding
	rows, err := d.auditData(ctx, sel)
	if err != nil {
		return nil, err
	}
	out = append(out, rows...)
	for _, k := range d.cameras {
		frames, err := d.auditVideos(ctx, k, sel)
		if err != nil {
			return nil, err
		}
		out = append(out, frames...)
	}
	return out, nil
}

// filesOf groups the dataset's episodes by the file fileOf names for
// each (false: the episode has none), and returns the groups with the
// files that hold a selected episode, in chunk and file order.
func (d *Dataset) filesOf(sel map[int64]bool, fileOf func(*EpisodeMeta) (fileRef, bool)) (map[fileRef][]*EpisodeMeta, []fileRef) {
	byFile := map[fileRef][]*EpisodeMeta{}
	for i := range d.eps {
		e := &d.eps[i]
		if r, ok := fileOf(e); ok {
			byFile[r] = append(byFile[r], e)
		}
	}
	refs := make([]fileRef, 0, len(byFile))
	for r, eps := range byFile {
		if slices.ContainsFunc(eps, func(e *EpisodeMeta) bool { return sel[e.Index] }) {
			refs = append(refs, r)
		}
	}
	slices.SortFunc(refs, func(a, b fileRef) int { return cmp.Or(cmp.Compare(a.chunk, b.chunk), cmp.Compare(a.file, b.file)) })
	return byFile, refs
}

// auditData finds the orphaned rows of the data files that hold a
// selected episode.
func (d *Dataset) auditData(ctx context.Context, sel map[int64]bool) ([]Finding, error) {
	byFile, refs := d.filesOf(sel, func(e *EpisodeMeta) (fileRef, bool) {
		return fileRef{e.DataChunk, e.DataFile}, true
	})
	var out []Finding
	for _, r := range refs {
		path, err := FilePath(d.Meta.DataPath, r.chunk, r.file, "")
		if err != nil {
			return nil, err
		}
		idx, err := d.episodeColumn(ctx, path)
		if err != nil {
			if isCorrupt(err) {
				continue // each episode's load reports it
			}
			return nil, err
		}
		out = append(out, d.orphans(path, byFile[r], idx)...)
	}
	return out, nil
}

// episodeColumn reads the episode_index column of a data file. Bad bytes
// are corruptBytes; a read that failed is returned as it is.
func (d *Dataset) episodeColumn(ctx context.Context, path string) ([]int64, error) {
	obj, err := d.dataFile(ctx, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, corrupt(err)
	}
	if err != nil {
		return nil, err
	}
	r := &boundReader{ctx: ctx, obj: obj}
	bad := func(err error) error {
		if rerr := r.failed(); rerr != nil {
			return rerr
		}
		return corrupt(err)
	}
	t, err := openTable(path, r, obj.size)
	if err != nil {
		return nil, bad(err)
	}
	c, err := t.column("episode_index")
	if err != nil {
		return nil, bad(err)
	}
	idx, err := c.int64s(0, t.rows())
	if err != nil {
		return nil, bad(err)
	}
	return idx, nil
}

// orphans returns the orphaned rows of one data file, whose rows carry
// the episode indices idx and in which the table places eps.
func (d *Dataset) orphans(path string, eps []*EpisodeMeta, idx []int64) []Finding {
	length := make(map[int64]int64, len(eps))
	for _, e := range eps {
		length[e.Index] = e.Length
	}
	seen := map[int64]int64{}
	type orphan struct {
		rows []int64
		why  string
	}
	var groups []*orphan // in order of the first row
	byWhy := map[string]*orphan{}
	add := func(row int64, why string) {
		g := byWhy[why]
		if g == nil {
			g = &orphan{why: why}
			byWhy[why] = g
			groups = append(groups, g)
		}
		g.rows = append(g.rows, row)
	}
	for row, e := range idx {
		row := int64(row)
		switch n, ok := length[e]; {
		case e < 0 || e >= int64(len(d.eps)):
			add(row, fmt.Sprintf("episode_index %d, which meta/episodes does not list (%d episodes)", e, len(d.eps)))
		case !ok:
			other, _ := FilePath(d.Meta.DataPath, d.eps[e].DataChunk, d.eps[e].DataFile, "")
			add(row, fmt.Sprintf("episode_index %d, an episode meta/episodes puts in %s", e, other))
		default:
			if seen[e]++; seen[e] > n {
				add(row, fmt.Sprintf("episode_index %d, whose %d rows (its length in meta/episodes) come before", e, n))
			}
		}
	}
	var out []Finding
	for _, g := range groups {
		out = append(out, Finding{Kind: OrphanRow, File: path, Episode: -1, Detail: fmt.Sprintf(
			"%s: %s %s carry %s: no episode owns them, and LeRobot, reading the data files as one table, finds every later row that many rows off its episode's range",
			path, plural(len(g.rows), "row", "rows"), rowList(g.rows), g.why)})
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// rowList writes row numbers, the first few of many.
func rowList(rows []int64) string {
	const show = 5
	var s []string
	for _, r := range rows[:min(len(rows), show)] {
		s = append(s, fmt.Sprint(r))
	}
	if len(rows) > show {
		s = append(s, "…")
	}
	return strings.Join(s, ", ")
}

// auditVideos checks camera key's video files that hold a selected
// episode: their frame counts against the table's rows, and their frames'
// presentation times for gaps.
func (d *Dataset) auditVideos(ctx context.Context, key string, sel map[int64]bool) ([]Finding, error) {
	byFile, refs := d.filesOf(sel, func(e *EpisodeMeta) (fileRef, bool) {
		s, ok := e.Videos[key]
		return fileRef{s.Chunk, s.File}, ok
	})
	var out []Finding
	for _, r := range refs {
		eps := byFile[r]
		path, err := d.videoPath(key, eps[0].Videos[key])
		if err != nil {
			return nil, err
		}
		x, err := d.video(ctx, path)
		switch {
		case errors.Is(err, fs.ErrNotExist) || isCorrupt(err):
			continue // each episode's load reports it
		case err != nil:
			return nil, err
		}
		out = append(out, d.videoFrames(path, key, eps, x, sel)...)
	}
	return out, nil
}

// videoFrames compares one video file's frames with the episodes the
// table puts in it.
func (d *Dataset) videoFrames(path, key string, eps []*EpisodeMeta, x *videoIndex, sel map[int64]bool) []Finding {
	slices.SortFunc(eps, func(a, b *EpisodeMeta) int {
		return cmp.Compare(a.Videos[key].FromTimestamp, b.Videos[key].FromTimestamp)
	})
	var rows int64
	for _, e := range eps {
		rows += e.Length
	}
	var out []Finding
	if n := int64(len(x.samples)); n != rows {
		out = append(out, Finding{Kind: VideoFrames, File: path, Episode: -1, Detail: fmt.Sprintf(
			"%s: %s has %d frames, but meta/episodes puts %d episodes of %d rows in it (episodes %d to %d)",
			key, path, n, len(eps), rows, eps[0].Index, eps[len(eps)-1].Index)})
	}
	fps := d.Meta.FPS
	if !(fps > 0) {
		return out
	}
	step := 1 / fps
	for k := 1; k < len(x.byPTS); k++ {
		prev := float64(x.samples[x.byPTS[k-1]].pts) / x.timescale
		at := float64(x.samples[x.byPTS[k]].pts) / x.timescale
		if at-prev <= step+Tolerance {
			continue
		}
		missing := int(math.Round((at-prev)*fps)) - 1
		// The first missing frame's time, and the episode it falls in.
		t := prev + step
		e := episodeAt(eps, key, t)
		where := "in no episode's span"
		index := int64(-1)
		if e != nil {
			index = e.Index
			if !sel[index] {
				continue // another selection's episode
			}
			where = fmt.Sprintf("episode %d step %d", e.Index, int(math.Round((t-e.Videos[key].FromTimestamp)*fps)))
		}
		span := fmt.Sprintf("at %.4fs", t)
		if missing > 1 {
			span = fmt.Sprintf("from %.4fs to %.4fs", t, at-step)
		}
		out = append(out, Finding{Kind: VideoFrames, File: path, Episode: index, Detail: fmt.Sprintf(
			"%s: %s has no frame %s (%s missing: its frames jump from %.4fs to %.4fs, 1/fps is %.4fs): %s",
			key, path, span, plural(max(missing, 1), "frame", "frames"), prev, at, step, where)})
	}
	return out
}

// episodeAt returns the episode whose span of camera key's video holds
// time t, or nil.
func episodeAt(eps []*EpisodeMeta, key string, t float64) *EpisodeMeta {
	for _, e := range eps {
		s := e.Videos[key]
		if t >= s.FromTimestamp-Tolerance && t < s.ToTimestamp-Tolerance {
			return e
		}
	}
	return nil
}
