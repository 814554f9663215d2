package lerobot

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// InfoPath is where a LeRobot dataset describes itself, relative to its
// root.
const InfoPath = "meta/info.json"

// ErrInfo matches every error about meta/info.json.
var ErrInfo = errors.New("invalid meta/info.json")

// Info is what oxefs reads of meta/info.json.
type Info struct {
	// Version is codebase_version: "v3.0". Only v3.x is read.
	Version   string
	RobotType string
	FPS       float64
	// Episodes and Frames are total_episodes and total_frames.
	Episodes, Frames int64
	// ChunksSize is chunks_size, the files per chunk directory.
	ChunksSize int64
	// DataPath and VideoPath are the path templates of the data files and
	// the video files ("data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet").
	DataPath, VideoPath string
	// Splits are the episode ranges of each split, sorted by name.
	Splits []SplitRange
	// Features are the declared features, sorted by key.
	Features []Feature
}

// SplitRange is one split: episodes [From, To).
type SplitRange struct {
	Name     string
	From, To int64
}

// Feature is one entry of info.json's features.
type Feature struct {
	Key string
	// DType is LeRobot's dtype: "video", "image", "string" or a numpy
	// dtype name ("float32", "int64", "bool", ...).
	DType string
	Shape []int
	// Codec and PixFmt are a video feature's info["video.codec"] and
	// info["video.pix_fmt"]; empty for others or when info.json omits them.
	Codec, PixFmt string
}

// IsVideo reports whether the feature is a camera stored as video.
func (f Feature) IsVideo() bool { return f.DType == "video" }

// IsImage reports whether the feature is a camera stored as encoded images
// in the data files.
func (f Feature) IsImage() bool { return f.DType == "image" }

// numericDTypes are the dtypes of numeric columns oxefs reads.
var numericDTypes = []string{"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64"}

type infoJSON struct {
	Version    string                 `json:"codebase_version"`
	RobotType  string                 `json:"robot_type"`
	Episodes   *int64                 `json:"total_episodes"`
	Frames     int64                  `json:"total_frames"`
	ChunksSize int64                  `json:"chunks_size"`
	FPS        *float64               `json:"fps"`
	Splits     map[string]string      `json:"splits"`
	DataPath   string                 `json:"data_path"`
	VideoPath  *string                `json:"video_path"`
	Features   map[string]featureJSON `json:"features"`
}

type featureJSON struct {
	DType string          `json:"dtype"`
	Shape []int           `json:"shape"`
	Info  json.RawMessage `json:"info"`
}

// ParseInfo parses meta/info.json. It refuses what oxefs cannot read
// correctly: a codebase_version other than v3.x (v2.x stores one file per
// episode; convert it with lerobot's converter), a split that is not
// "FROM:TO" within total_episodes, a feature without dtype or with a
// negative dimension, no fps, no data_path, or video features without a
// video_path. Every error wraps ErrInfo and names the field.
func ParseInfo(b []byte) (*Info, error) {
	var j infoJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInfo, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInfo, fmt.Sprintf(format, args...))
	}
	if !strings.HasPrefix(j.Version, "v3.") {
		if j.Version == "" {
			return nil, bad("no codebase_version (oxefs reads LeRobot format v3.x)")
		}
		return nil, bad("codebase_version %q: oxefs reads LeRobot format v3.x (convert older datasets with lerobot's v2.1→v3.0 converter)", j.Version)
	}
	in := &Info{Version: j.Version, RobotType: j.RobotType, Frames: j.Frames, ChunksSize: j.ChunksSize, DataPath: j.DataPath}
	if j.Episodes == nil || *j.Episodes < 0 {
		return nil, bad("total_episodes is missing or negative")
	}
	in.Episodes = *j.Episodes
	if j.FPS == nil || !(*j.FPS > 0) || math.IsInf(*j.FPS, 0) {
		return nil, bad("fps is missing or not positive")
	}
	in.FPS = *j.FPS
	if j.DataPath == "" {
		return nil, bad("no data_path")
	}
	if j.VideoPath != nil {
		in.VideoPath = *j.VideoPath
	}
	for name, r := range j.Splits {
		s, err := parseSplitRange(name, r, in.Episodes)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInfo, err)
		}
		in.Splits = append(in.Splits, s)
	}
	sort.Slice(in.Splits, func(a, b int) bool { return in.Splits[a].Name < in.Splits[b].Name })
	if len(j.Features) == 0 {
		return nil, bad("no features")
	}
	for key, f := range j.Features {
		feat, err := parseFeature(key, f)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInfo, err)
		}
		if feat.IsVideo() && in.VideoPath == "" {
			return nil, bad("feature %q is a video but there is no video_path", key)
		}
		in.Features = append(in.Features, feat)
	}
	sort.Slice(in.Features, func(a, b int) bool { return in.Features[a].Key < in.Features[b].Key })
	return in, nil
}

// parseSplitRange parses one split's "FROM:TO", LeRobot's episode range.
func parseSplitRange(name, r string, episodes int64) (SplitRange, error) {
	if name == "" || strings.ContainsAny(name, "[]+: \t\n") {
		return SplitRange{}, fmt.Errorf("split name %q: a split name is letters, digits, '_' and '-'", name)
	}
	from, to, ok := strings.Cut(r, ":")
	if !ok {
		return SplitRange{}, fmt.Errorf("split %s: %q is not FROM:TO", name, r)
	}
	a, err1 := strconv.ParseInt(from, 10, 64)
	b, err2 := strconv.ParseInt(to, 10, 64)
	if err1 != nil || err2 != nil || a < 0 || b < a || b > episodes {
		return SplitRange{}, fmt.Errorf("split %s: %q is not FROM:TO with 0 ≤ FROM ≤ TO ≤ total_episodes (%d)", name, r, episodes)
	}
	return SplitRange{Name: name, From: a, To: b}, nil
}

func parseFeature(key string, f featureJSON) (Feature, error) {
	out := Feature{Key: key, DType: f.DType, Shape: slices.Clone(f.Shape)}
	if key == "" {
		return out, errors.New("a feature with an empty name")
	}
	if f.DType == "" {
		return out, fmt.Errorf("feature %q has no dtype", key)
	}
	for _, d := range f.Shape {
		if d < 0 || d > 1<<24 {
			return out, fmt.Errorf("feature %q: shape %v", key, f.Shape)
		}
	}
	if out.IsVideo() || out.IsImage() {
		if len(f.Shape) != 3 {
			return out, fmt.Errorf("feature %q: a camera's shape is [height, width, channels], not %v", key, f.Shape)
		}
	}
	if out.IsVideo() && len(f.Info) > 0 && string(f.Info) != "null" {
		var info map[string]any
		if err := json.Unmarshal(f.Info, &info); err != nil {
			return out, fmt.Errorf("feature %q: info: %v", key, err)
		}
		out.Codec, _ = info["video.codec"].(string)
		out.PixFmt, _ = info["video.pix_fmt"].(string)
	}
	return out, nil
}

// Split returns the named split.
func (in *Info) Split(name string) (SplitRange, bool) {
	for _, s := range in.Splits {
		if s.Name == name {
			return s, true
		}
	}
	return SplitRange{}, false
}

// Feature returns the named feature.
func (in *Info) Feature(key string) (Feature, bool) {
	i, ok := slices.BinarySearchFunc(in.Features, key, func(f Feature, k string) int { return strings.Compare(f.Key, k) })
	if !ok {
		return Feature{}, false
	}
	return in.Features[i], true
}

// Cameras are the keys of the video and image features, sorted.
func (in *Info) Cameras() []string {
	var keys []string
	for _, f := range in.Features {
		if f.IsVideo() || f.IsImage() {
			keys = append(keys, f.Key)
		}
	}
	return keys
}

// FilePath fills a data_path or video_path template: Python's str.format
// with the fields {chunk_index:03d}, {file_index:03d} and {video_key}. Any
// other field, or a format spec other than a zero-padded width, is an
// error naming it.
func FilePath(tmpl string, chunk, file int64, videoKey string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(tmpl); {
		c := tmpl[i]
		switch {
		case c == '{' && i+1 < len(tmpl) && tmpl[i+1] == '{':
			b.WriteByte('{')
			i += 2
		case c == '}' && i+1 < len(tmpl) && tmpl[i+1] == '}':
			b.WriteByte('}')
			i += 2
		case c == '{':
			end := strings.IndexByte(tmpl[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("path template %q: unclosed {", tmpl)
			}
			field, spec, _ := strings.Cut(tmpl[i+1:i+end], ":")
			var v string
			switch field {
			case "chunk_index":
				v = strconv.FormatInt(chunk, 10)
			case "file_index":
				v = strconv.FormatInt(file, 10)
			case "video_key":
				v = videoKey
			default:
				return "", fmt.Errorf("path template %q: unknown field {%s} (valid: chunk_index, file_index, video_key)", tmpl, field)
			}
			if spec != "" {
				w, ok := zeroPad(spec)
				if !ok || field == "video_key" {
					return "", fmt.Errorf("path template %q: format spec %q of {%s} (oxefs reads 0Nd)", tmpl, spec, field)
				}
				for len(v) < w {
					v = "0" + v
				}
			}
			b.WriteString(v)
			i += end + 1
		case c == '}':
			return "", fmt.Errorf("path template %q: unmatched }", tmpl)
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

// zeroPad parses a format spec "0Nd" (or "d") and returns N.
func zeroPad(spec string) (int, bool) {
	if spec == "d" {
		return 0, true
	}
	if len(spec) < 3 || spec[0] != '0' || spec[len(spec)-1] != 'd' {
		return 0, false
	}
	n, err := strconv.Atoi(spec[1 : len(spec)-1])
	if err != nil || n < 0 || n > 20 {
		return 0, false
	}
	return n, true
}
