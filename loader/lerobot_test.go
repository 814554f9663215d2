package loader

import (
	"path/filepath"
	"testing"

	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/internal/missing"
)

// lerobotFixtures is where testdata/generate_lerobot.py wrote the LeRobot
// datasets.
var lerobotFixtures = filepath.Join("..", "testdata", "lerobot")

// requireVideo skips a test when libavcodec cannot be loaded.
func requireVideo(t *testing.T) {
	t.Helper()
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
}
