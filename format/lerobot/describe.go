package lerobot

import (
	"fmt"
	"slices"
	"strings"
)

// Description is what `oxefs inspect` shows of a LeRobot dataset: what a
// mix config needs (split names, feature keys, cameras) and what the
// episode table says of its episodes.
type Description struct {
	Name      string               `json:"name"`
	Format    string               `json:"format"` // "lerobot v3.0"
	Source    string               `json:"source"`
	RobotType string               `json:"robot_type,omitempty"`
	FPS       float64              `json:"fps"`
	Splits    []SplitDescription   `json:"splits"`
	Features  []FeatureDescription `json:"features"`
	Cameras   []CameraDescription  `json:"cameras"`
	Tasks     int                  `json:"tasks"`
	Examples  []string             `json:"task_examples,omitempty"`
	Files     map[string]int       `json:"files"` // data files, and video files per camera
}

// SplitDescription is one split: its episodes, the data files they are in
// (the shards of the plan) and their lengths from the episode table.
type SplitDescription struct {
	Name     string      `json:"name"`
	Episodes int64       `json:"episodes"`
	Shards   int         `json:"shards"`
	Lengths  LengthStats `json:"lengths"`
}

// LengthStats summarise episode lengths in steps.
type LengthStats struct {
	Min    int64   `json:"min"`
	Median int64   `json:"median"`
	Mean   float64 `json:"mean"`
	Max    int64   `json:"max"`
}

// FeatureDescription is one feature as the config names it.
type FeatureDescription struct {
	Key   string `json:"key"`
	Kind  string `json:"kind"` // video, image, tensor, text
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
}

// CameraDescription is one camera: a candidate for image_key.
type CameraDescription struct {
	Key    string `json:"key"`
	Stored string `json:"stored"` // "video/av1", "png in the data files"
	Height int    `json:"height"`
	Width  int    `json:"width"`
}

// Describe summarises the dataset from its metadata; it reads nothing.
func (d *Dataset) Describe() Description {
	desc := Description{Name: d.Name, Format: "lerobot " + d.Meta.Version, Source: d.Source.Location(), RobotType: d.Meta.RobotType,
		FPS: d.Meta.FPS, Tasks: len(d.tasks), Files: map[string]int{}}
	for _, s := range d.Meta.Splits {
		sd := SplitDescription{Name: s.Name, Episodes: s.To - s.From, Shards: len(d.splits[s.Name])}
		var ls []int64
		for i := s.From; i < s.To; i++ {
			ls = append(ls, d.eps[i].Length)
		}
		sd.Lengths = lengthStats(ls)
		desc.Splits = append(desc.Splits, sd)
	}
	for _, k := range d.keys {
		f := d.features[k]
		kind := f.Kind.String()
		if strings.HasPrefix(f.Encoding, "video") {
			kind = "video"
		}
		desc.Features = append(desc.Features, FeatureDescription{Key: k, Kind: kind, DType: f.DType, Shape: f.Shape})
		if len(f.Shape) == 3 && (kind == "video" || kind == "image") {
			stored := f.Encoding
			if kind == "image" {
				stored = "images in the data files"
			}
			desc.Cameras = append(desc.Cameras, CameraDescription{Key: k, Stored: stored, Height: f.Shape[0], Width: f.Shape[1]})
		}
	}
	data := map[fileRef]bool{}
	videos := map[string]map[fileRef]bool{}
	for _, e := range d.eps {
		data[fileRef{e.DataChunk, e.DataFile}] = true
		for k, v := range e.Videos {
			if videos[k] == nil {
				videos[k] = map[fileRef]bool{}
			}
			videos[k][fileRef{v.Chunk, v.File}] = true
		}
	}
	desc.Files["data"] = len(data)
	for k, m := range videos {
		desc.Files["videos/"+k] = len(m)
	}
	var tasks []string
	for _, t := range d.tasks {
		tasks = append(tasks, t)
	}
	slices.Sort(tasks)
	desc.Examples = tasks[:min(len(tasks), 5)]
	return desc
}

func lengthStats(ls []int64) LengthStats {
	if len(ls) == 0 {
		return LengthStats{}
	}
	s := slices.Clone(ls)
	slices.Sort(s)
	var sum int64
	for _, l := range s {
		sum += l
	}
	return LengthStats{Min: s[0], Median: s[len(s)/2], Mean: float64(sum) / float64(len(s)), Max: s[len(s)-1]}
}

// String renders the description for people.
func (desc Description) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s  (%s)\n", desc.Name, desc.Format, desc.Source)
	if desc.RobotType != "" {
		fmt.Fprintf(&b, "robot_type %s, ", desc.RobotType)
	}
	fmt.Fprintf(&b, "%g fps, %d data files", desc.FPS, desc.Files["data"])
	for _, k := range sortedKeys(desc.Files) {
		if strings.HasPrefix(k, "videos/") {
			fmt.Fprintf(&b, ", %d %s files", desc.Files[k], k)
		}
	}
	b.WriteString("\n\nsplits:\n")
	for _, s := range desc.Splits {
		l := s.Lengths
		fmt.Fprintf(&b, "  %-12s %8d episodes  %5d shards  steps min/median/mean/max %d/%d/%.1f/%d\n",
			s.Name, s.Episodes, s.Shards, l.Min, l.Median, l.Mean, l.Max)
	}
	b.WriteString("\nfeatures (keys for the mix config; all per step):\n")
	for _, f := range desc.Features {
		fmt.Fprintf(&b, "  %-40s %-7s %-8s %v\n", f.Key, f.Kind, f.DType, f.Shape)
	}
	b.WriteString("\ncameras (image_key):\n")
	if len(desc.Cameras) == 0 {
		b.WriteString("  (none)\n")
	}
	for _, c := range desc.Cameras {
		fmt.Fprintf(&b, "  %-40s %dx%d (HxW)  %s\n", c.Key, c.Height, c.Width, c.Stored)
	}
	fmt.Fprintf(&b, "\ntasks (language_key: %s): %d", TaskKey, desc.Tasks)
	for _, t := range desc.Examples {
		fmt.Fprintf(&b, "\n  %q", t)
	}
	b.WriteByte('\n')
	return b.String()
}
