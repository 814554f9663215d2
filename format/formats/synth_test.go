package formats

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/format"
)

// TestSynthLeRobotRefuses: the LeRobot synth refuses the options of a
// sharded format and a missing video encoder before writing anything, with
// the messages `oxefs synth` prints.
func TestSynthLeRobotRefuses(t *testing.T) {
	noVideo := errors.New("libavcodec not found")
	for _, tc := range []struct {
		name string
		opts format.SynthOptions
		want string
	}{
		{"shards", format.SynthOptions{Shards: 2}, "--shards and --shard-size are for --format rlds"},
		{"shard size", format.SynthOptions{ShardBytes: 40 << 20}, "--shards and --shard-size are for --format rlds"},
		{"no video", format.SynthOptions{VideoAvailable: func() error { return noVideo }}, "synth --format lerobot encodes video: libavcodec not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Dir = t.TempDir()
			_, err := format.Synth(context.Background(), "lerobot", tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
			if tc.name == "no video" && !errors.Is(err, noVideo) {
				t.Errorf("%v does not wrap the encoder's error", err)
			}
		})
	}
}
