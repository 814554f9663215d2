package episode

import (
	"errors"
	"fmt"
	"testing"
)

func TestSplitLocate(t *testing.T) {
	s := Split{Name: "train", ShardEpisodes: []int64{3, 0, 2, 0}}
	if s.Episodes() != 5 {
		t.Fatalf("Episodes() = %d, want 5", s.Episodes())
	}
	want := [][2]int64{{0, 0}, {0, 1}, {0, 2}, {2, 0}, {2, 1}}
	for i, w := range want {
		shard, rec := s.Locate(int64(i))
		if int64(shard) != w[0] || rec != w[1] {
			t.Errorf("Locate(%d) = %d/%d, want %d/%d (empty shards are never chosen)", i, shard, rec, w[0], w[1])
		}
	}
	for _, i := range []int64{-1, 5, 100} {
		if shard, _ := s.Locate(i); shard != -1 {
			t.Errorf("Locate(%d) = shard %d, want -1", i, shard)
		}
	}
}

func TestFeatures(t *testing.T) {
	fs, err := NewFeatures([]Feature{
		{Key: "steps/observation/image", Kind: KindImage, PerStep: true},
		{Key: "steps/action", Kind: KindTensor, DType: "float32", Shape: []int{7}, PerStep: true},
		{Key: "episode_metadata/id", Kind: KindText},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(fs.Keys()); got != "[episode_metadata/id steps/action steps/observation/image]" {
		t.Errorf("Keys() = %s, want them sorted", got)
	}
	if f, ok := fs.Lookup("steps/action"); !ok || f.Shape[0] != 7 {
		t.Errorf("Lookup(steps/action) = %+v, %v", f, ok)
	}
	if _, ok := fs.Lookup("steps/nope"); ok {
		t.Error("Lookup found a key that is not there")
	}
	cams := fs.Matching(func(f Feature) bool { return f.Kind == KindImage && f.PerStep })
	if len(cams) != 1 || cams[0] != "steps/observation/image" {
		t.Errorf("Matching(cameras) = %v", cams)
	}
	if _, err := NewFeatures([]Feature{{Key: "a"}, {Key: "a"}}); err == nil {
		t.Error("a key declared twice was accepted")
	}
}

func TestErrors(t *testing.T) {
	err := fmt.Errorf("loading: %w", &CorruptError{Dataset: "bridge", Shard: "bridge-train.tfrecord-00001-of-00004", Record: 7, Err: ErrMissingShard})
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrMissingShard) {
		t.Errorf("%v does not match ErrCorrupt and ErrMissingShard", err)
	}
	if got, want := err.Error(), "loading: dataset bridge shard bridge-train.tfrecord-00001-of-00004 record 7: shard missing"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	framing := &CorruptError{Dataset: "d", Shard: "s", Record: -1, Err: errors.New("bad length")}
	if got, want := framing.Error(), "dataset d shard s: bad length"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	uk := &UnknownFeatureError{Dataset: "d", Key: "x", Valid: []string{"a", "b", "c"}}
	if !errors.Is(uk, ErrUnknownFeature) || uk.Error() != `dataset d has no feature "x" (valid: a, b, c)` {
		t.Errorf("UnknownFeatureError: %v", uk)
	}
	if got := JoinLimited([]string{"a", "b", "c"}, 2); got != "a, b, ... 1 more" {
		t.Errorf("JoinLimited = %q", got)
	}
}
