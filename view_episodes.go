package main

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"strings"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/loader"
	"github.com/oxefs/oxefs/view"
)

// viewEpisodes feeds the page's episode scrubber from the daemon's
// datasets, through its RAM cache of episodes.
type viewEpisodes struct {
	p       *loader.Pipeline
	decoder string // --decoder
}

var _ view.Episodes = viewEpisodes{}

func (v viewEpisodes) Datasets() []view.EpisodeDataset {
	var out []view.EpisodeDataset
	for _, d := range v.p.Mix.Datasets {
		ed := view.EpisodeDataset{Name: d.Config.Name, Source: d.Config.Source}
		for _, s := range d.Data.Info().Splits {
			ed.Splits = append(ed.Splits, view.EpisodeSplit{Name: s.Name, Episodes: s.Episodes()})
		}
		out = append(out, ed)
	}
	return out
}

func (v viewEpisodes) dataset(name string) (*loader.Dataset, error) {
	var names []string
	for _, d := range v.p.Mix.Datasets {
		if d.Config.Name == name {
			return d, nil
		}
		names = append(names, d.Config.Name)
	}
	return nil, view.BadRequest("dataset %q: the mix's datasets are %s", name, strings.Join(names, ", "))
}

func (v viewEpisodes) Index(name, split string, shard, record int) (int64, error) {
	d, err := v.dataset(name)
	if err != nil {
		return 0, err
	}
	si, ok := d.Data.Info().Split(split)
	if !ok {
		return 0, view.BadRequest("split %q: %s has %s", split, name, strings.Join(d.Data.Info().SplitNames(), ", "))
	}
	if shard >= len(si.ShardEpisodes) || int64(record) >= si.ShardEpisodes[shard] {
		return 0, view.BadRequest("episode %s/%s/%d/%d: no such record", name, split, shard, record)
	}
	var idx int64
	for _, n := range si.ShardEpisodes[:shard] {
		idx += n
	}
	return idx + int64(record), nil
}

func (v viewEpisodes) Episode(ctx context.Context, name, split string, index int64) (*view.Episode, error) {
	d, err := v.dataset(name)
	if err != nil {
		return nil, err
	}
	info := d.Data.Info()
	si, ok := info.Split(split)
	if !ok {
		return nil, view.BadRequest("split %q: %s has %s", split, name, strings.Join(info.SplitNames(), ", "))
	}
	shard, record := si.Locate(index)
	if shard < 0 {
		return nil, view.BadRequest("episode %d: split %s of %s has episodes 0 to %d", index, split, name, si.Episodes()-1)
	}
	ep, err := d.Episodes.Episode(ctx, episode.Key{Split: split, Shard: shard, Record: int(record)})
	if err != nil {
		return nil, err
	}
	ep = ep.Rename(name)
	out := &view.Episode{ID: ep.ID(), Steps: ep.Steps(), FPS: info.FPS}
	if out.Action, err = perStep(ep, d.Config.ActionKeys); err != nil {
		return nil, err
	}
	if d.Config.StateKey != "" {
		if out.State, err = perStep(ep, []string{d.Config.StateKey}); err != nil {
			return nil, err
		}
	}
	if k := d.Config.LanguageKey; k != "" {
		if lv, err := ep.Feature(k); err == nil && lv.Spec().Kind == episode.KindText {
			out.Task = string(lv.Bytes(0))
		}
	}
	cams := map[string]episode.Feature{}
	for _, f := range info.Features.All() {
		if f.Kind == episode.KindImage && f.PerStep && !f.Ragged {
			if _, err := ep.Feature(f.Key); err == nil { // a video camera the daemon does not read is left out
				out.Cameras = append(out.Cameras, f.Key)
				cams[f.Key] = f
			}
		}
	}
	out.Frame = func(ctx context.Context, camera string, step int) (image.Image, error) {
		return v.frame(ctx, ep, cams[camera], step)
	}
	return out, nil
}

// perStep concatenates the keys' values of each step.
func perStep(ep episode.Episode, keys []string) ([][]float64, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	out := make([][]float64, ep.Steps())
	for _, k := range keys {
		fv, err := ep.Feature(k)
		if err != nil {
			return nil, err
		}
		vals, err := fv.Float64s(nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		per := max(fv.Per(), 1)
		for s := range out {
			if (s+1)*per <= len(vals) {
				out[s] = append(out[s], vals[s*per:(s+1)*per]...)
			}
		}
	}
	return out, nil
}

// frame decodes a camera's frame at its own size, as the batches decode
// it (libjpeg-turbo, image/png, libavcodec for video).
func (v viewEpisodes) frame(ctx context.Context, ep episode.Episode, f episode.Feature, step int) (image.Image, error) {
	if len(f.Shape) < 2 || f.Shape[0] < 1 || f.Shape[1] < 1 {
		return nil, fmt.Errorf("camera %s: its frame size is not declared (%v)", f.Key, f.Shape)
	}
	h, w := f.Shape[0], f.Shape[1]
	fv, err := ep.Feature(f.Key)
	if err != nil {
		return nil, err
	}
	var src frames.Source
	if s, ok := fv.(frames.Stream); ok {
		src = &frames.Video{Key: f.Key, Steps: ep.Steps(), Stream: s}
	} else {
		src = &frames.Images{Key: f.Key, Steps: ep.Steps(), Encoded: fv}
	}
	d, err := frames.NewDecoder(frames.DecoderOptions{JPEG: v.decoder})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	buf := make([]byte, h*w*3)
	if err := src.Decode(ctx, d, []int{step}, frames.Slot{Buf: buf, Frames: 1, H: h, W: w, Layout: frames.BFHWC}); err != nil {
		return nil, err
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for p := range h * w {
		img.SetRGBA(p%w, p/w, color.RGBA{buf[3*p], buf[3*p+1], buf[3*p+2], 255})
	}
	return img, nil
}
