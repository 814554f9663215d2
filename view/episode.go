package view

import (
	"context"
	"fmt"
	"image"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Episodes gives the episode scrubber the episodes of the mix's datasets,
// read from their sources (local, gs://, s3://, hf://) as the daemon reads
// them: the mount serves batches, not episodes, so only a daemon that
// holds the datasets (mount --view) has one.
type Episodes interface {
	// Datasets lists the mix's datasets with their splits.
	Datasets() []EpisodeDataset
	// Episode loads episode index of a dataset's split. A dataset, split
	// or index the mix lacks is a BadRequest error.
	Episode(ctx context.Context, dataset, split string, index int64) (*Episode, error)
	// Index is the index in its split of the episode stored as record of
	// shard (the last two parts of an episode id, as batches name it).
	Index(dataset, split string, shard, record int) (int64, error)
}

// EpisodeDataset is a dataset of the mix, for the scrubber.
type EpisodeDataset struct {
	Name   string         `json:"name"`
	Source string         `json:"source"`
	Splits []EpisodeSplit `json:"splits"`
}

// EpisodeSplit is a split and its number of episodes.
type EpisodeSplit struct {
	Name     string `json:"name"`
	Episodes int64  `json:"episodes"`
}

// Episode is one episode as the scrubber shows it.
type Episode struct {
	ID      string
	Steps   int
	FPS     float64
	Task    string
	Cameras []string
	// Action and State are one vector per step (nil when the mix names
	// none).
	Action, State [][]float64
	// Frame decodes a camera's frame at a step.
	Frame func(ctx context.Context, camera string, step int) (image.Image, error)
}

// BadRequest is an error that the viewer answers with a 400 and the
// message.
func BadRequest(format string, args ...any) error { return badRequest(format, args...) }

// episodeView is what /api/episode returns.
type episodeView struct {
	Dataset string    `json:"dataset"`
	Split   string    `json:"split"`
	Index   int64     `json:"index"`
	ID      string    `json:"id"`
	Steps   int       `json:"steps"`
	FPS     float64   `json:"fps"`
	Task    string    `json:"task"`
	Cameras []string  `json:"cameras"`
	Action  []numbers `json:"action"`
	State   []numbers `json:"state"`
}

var errNoEpisodes = fmt.Errorf("the episode scrubber reads the mix's datasets, which this server did not open: oxefs mount --view serves it, and oxefs view MOUNT unless --no-episodes or the datasets of the mount's config failed to open (its log says why)")

func (s *Server) episodeDatasets(url.Values) (any, error) {
	if s.episodes == nil {
		return nil, fmt.Errorf("%w: %w", errNoEpisodes, errNotFound)
	}
	ds := s.episodes.Datasets()
	for i := range ds {
		ds[i].Source = redactURL(ds[i].Source)
	}
	return ds, nil
}

func (s *Server) loadEpisode(ctx context.Context, q url.Values) (*Episode, int64, error) {
	if s.episodes == nil {
		return nil, 0, fmt.Errorf("%w: %w", errNoEpisodes, errNotFound)
	}
	dataset, split := q.Get("dataset"), q.Get("split")
	var idx int64
	if id := q.Get("id"); id != "" {
		// dataset/split/shard/record, as a batch's episode_id names it
		parts := strings.Split(id, "/")
		if len(parts) != 4 || dataset != "" || split != "" || q.Get("index") != "" {
			return nil, 0, badRequest("id %q: give an episode id dataset/split/shard/record alone, or dataset, split and index", id)
		}
		shard, err1 := strconv.Atoi(parts[2])
		record, err2 := strconv.Atoi(parts[3])
		if err1 != nil || err2 != nil || shard < 0 || record < 0 {
			return nil, 0, badRequest("id %q: shard and record are numbers", id)
		}
		dataset, split = parts[0], parts[1]
		var err error
		if idx, err = s.episodes.Index(dataset, split, shard, record); err != nil {
			return nil, 0, err
		}
	} else {
		var err error
		idx, err = strconv.ParseInt(q.Get("index"), 10, 64)
		if err != nil || idx < 0 {
			return nil, 0, badRequest("index %q is not an episode number", q.Get("index"))
		}
	}
	q.Set("dataset", dataset)
	q.Set("split", split)
	ep, err := s.episodes.Episode(ctx, dataset, split, idx)
	return ep, idx, err
}

func (s *Server) episode(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := query(q, "dataset", "split", "index", "id"); err != nil {
		s.fail(w, r, err)
		return
	}
	ep, idx, err := s.loadEpisode(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ev := episodeView{Dataset: q.Get("dataset"), Split: q.Get("split"), Index: idx, ID: ep.ID, Steps: ep.Steps, FPS: ep.FPS, Task: ep.Task, Cameras: ep.Cameras}
	for _, a := range ep.Action {
		ev.Action = append(ev.Action, numbers{V: a, Bits: 32})
	}
	for _, a := range ep.State {
		ev.State = append(ev.State, numbers{V: a, Bits: 32})
	}
	s.writeJSON(w, r, ev)
}

func (s *Server) episodeFrame(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := query(q, "dataset", "split", "index", "id", "camera", "step", "format"); err != nil {
		s.fail(w, r, err)
		return
	}
	ep, _, err := s.loadEpisode(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	step, err := smallInt(q.Get("step"), "step")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if step >= ep.Steps {
		s.fail(w, r, badRequest("step %d: the episode has steps 0 to %d", step, ep.Steps-1))
		return
	}
	camera := q.Get("camera")
	known := false
	for _, c := range ep.Cameras {
		known = known || c == camera
	}
	if !known {
		s.fail(w, r, badRequest("camera %q: the episode's cameras are %v", camera, ep.Cameras))
		return
	}
	if err := s.encode.Acquire(r.Context(), 1); err != nil {
		s.fail(w, r, err)
		return
	}
	defer s.encode.Release(1)
	img, err := ep.Frame(r.Context(), camera, step)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b, ctype, err := encodeFrame(img, q.Get("format"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "private, max-age=60")
	w.Write(b)
}
