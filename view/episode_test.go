package view

import (
	"context"
	"encoding/json"
	"image"
	"image/color"
	_ "image/png"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeEpisodes is one dataset "d" with a split "train" of 3 episodes in
// shards of 2 and 1, each of 4 steps and a camera "cam" whose frame at
// step s is filled with the value 10·s.
type fakeEpisodes struct{}

func (fakeEpisodes) Datasets() []EpisodeDataset {
	return []EpisodeDataset{{Name: "d", Source: "https://u:tok@host/d", Splits: []EpisodeSplit{{Name: "train", Episodes: 3}}}}
}

func (fakeEpisodes) Index(dataset, split string, shard, record int) (int64, error) {
	if dataset != "d" || split != "train" || shard > 1 || record > 1-shard {
		return 0, BadRequest("no episode %s/%s/%d/%d", dataset, split, shard, record)
	}
	return int64(2*shard + record), nil
}

func (fakeEpisodes) Episode(_ context.Context, dataset, split string, index int64) (*Episode, error) {
	if dataset != "d" || split != "train" || index > 2 {
		return nil, BadRequest("no episode %d", index)
	}
	ep := &Episode{ID: "d/train/x", Steps: 4, Cameras: []string{"cam"}}
	for s := range 4 {
		ep.Action = append(ep.Action, []float64{float64(index), float64(s) / 4})
	}
	ep.Frame = func(_ context.Context, _ string, step int) (image.Image, error) {
		img := image.NewRGBA(image.Rect(0, 0, 2, 2))
		for i := range 4 {
			img.Set(i%2, i/2, color.RGBA{uint8(10 * step), 0, 0, 255})
		}
		return img, nil
	}
	return ep, nil
}

func TestEpisodeScrubber(t *testing.T) {
	m, err := OpenMount(stepMount(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	srv := httptest.NewServer(NewServer(m, Options{Episodes: fakeEpisodes{}}))
	defer srv.Close()
	tests := []struct {
		path string
		code int
		says string
	}{
		{"/api/episodes", 200, `"source":"https://host/d"`},
		{"/api/episode?dataset=d&split=train&index=2", 200, `"action":[[2,0],[2,0.25],[2,0.5],[2,0.75]]`},
		{"/api/episode?id=d/train/1/0", 200, `"index":2`},
		{"/api/episode?id=d/train/0/5", 400, "no episode"},
		{"/api/episode?id=d/train/0/1&index=3", 400, "alone"},
		{"/api/episode?id=../../x", 400, "dataset/split/shard/record"},
		{"/api/episode?dataset=d&split=train&index=-1", 400, "not an episode number"},
		{"/api/episode?dataset=x&split=train&index=0", 400, "no episode"},
		{"/api/episode/frame?dataset=d&split=train&index=0&camera=cam&step=4", 400, "steps 0 to 3"},
		{"/api/episode/frame?dataset=d&split=train&index=0&camera=other&step=0", 400, "cameras are [cam]"},
		{"/api/episode/frame?dataset=d&split=train&index=0&camera=cam&step=2&path=/etc", 400, "unknown parameter"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			code, body := get(t, srv.URL+tc.path)
			if code != tc.code || !strings.Contains(string(body), tc.says) {
				t.Errorf("%d %s; want %d with %q", code, body, tc.code, tc.says)
			}
		})
	}
	resp, err := srv.Client().Get(srv.URL + "/api/episode/frame?dataset=d&split=train&index=0&camera=cam&step=3")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	img, _, err := image.Decode(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _, _ := img.At(1, 1).RGBA(); r>>8 != 30 {
		t.Errorf("frame of step 3 has red %d, want 30", r>>8)
	}

	// Without a source of episodes (oxefs view of another process's
	// mount) the scrubber says where to find one.
	plain := newTestServer(t, stepMount(t))
	code, body := get(t, plain.URL+"/api/episodes")
	var e map[string]string
	json.Unmarshal(body, &e)
	if code != 404 || !strings.Contains(e["error"], "mount --view") {
		t.Errorf("no scrubber: %d %s", code, body)
	}
}
