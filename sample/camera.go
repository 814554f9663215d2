package sample

import (
	"fmt"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames"
)

// Camera is a camera's frames in one episode as the frames.Source they
// are decoded through: one encoded image per step (frames.Images), or a
// video track (a view that is a frames.Stream, as episode.Video is). How a
// camera is stored changes only which Source Open gives. A Camera is a
// worker's scratch, so that opening one allocates nothing.
type Camera struct {
	images frames.Images
	video  frames.Video
}

// Open returns the frames of image key in ep, decoded at the size the
// dataset declares (zero fields: unknown). A camera whose frame count is
// not the episode's step count is corrupt data of the episode.
func (c *Camera) Open(ep episode.Episode, key string, declared frames.Size) (frames.Source, error) {
	v, err := ep.Feature(key)
	if err != nil {
		return nil, err
	}
	var src frames.Source
	if s, ok := v.(frames.Stream); ok {
		c.video = frames.Video{Key: key, Steps: ep.Steps(), Stream: s, Size: declared, SizeFrom: "the dataset declares"}
		src = &c.video
	} else {
		c.images = frames.Images{Key: key, Steps: ep.Steps(), Encoded: v, Size: declared, SizeFrom: "features.json declares"}
		src = &c.images
	}
	if src.Len() != ep.Steps() {
		return nil, ep.Corrupt(fmt.Errorf("%s has %d frames for %d steps", key, src.Len(), ep.Steps()))
	}
	return src, nil
}

// A format's video view reaches the camera as an episode.View; it is
// decoded as a frames.Stream. The two declare the same methods.
var _ frames.Stream = episode.Video(nil)
