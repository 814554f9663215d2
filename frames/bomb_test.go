package frames

import (
	"errors"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestDecompressionBombs: PNGs of a few KB that declare huge images are
// refused from their header, before image/png allocates anything like
// their decoded size, whatever size the source expects; an image within the
// bounds still decodes.
func TestDecompressionBombs(t *testing.T) {
	bombs := []struct {
		name       string
		png        []byte
		decodedMiB int // what image/png would allocate
	}{
		// 16 MP of 16-bit RGBA: NRGBA64, 8 bytes a pixel, under the old
		// 32 MP cap.
		{"4096x4096 RGBA 16-bit", testkit.PNGBomb(t, 4096, 4096, 16, 6), 128},
		// Wider than any camera: refused by the side bound.
		{"30000x600 gray", testkit.PNGBomb(t, 30000, 600, 8, 0), 17},
	}
	for _, bomb := range bombs {
		t.Logf("%s: %d bytes of PNG, %d MiB decoded", bomb.name, len(bomb.png), bomb.decodedMiB)
	}
	mem := NewDecodeMemory(32 << 20)
	for _, choice := range []string{JPEGTurbo, JPEGGo} {
		d := testDecoder(t, choice)
		d.mem = mem
		for _, bomb := range bombs {
			t.Run(choice+"/"+bomb.name, func(t *testing.T) {
				var err error
				n := testkit.Allocated(func() { _, err = d.decode(bomb.png, Size{}, "", nil, 0, 0, fit{}) })
				if !errors.Is(err, ErrUndecodable) {
					t.Fatalf("got %v, want ErrUndecodable", err)
				}
				if n > 4<<20 {
					t.Errorf("refusing the bomb allocated %d bytes, want well under its %d MiB", n, bomb.decodedMiB)
				}
				t.Logf("%v (%d bytes allocated)", err, n)
			})
		}
		// Within the budget: 1024×1024 RGBA 16-bit needs 8 MiB + 3 MiB.
		img, err := d.decode(testkit.PNGBomb(t, 1024, 1024, 16, 6), Size{}, "", nil, 0, 0, fit{})
		if err != nil || img.W != 1024 || img.H != 1024 {
			t.Fatalf("%s: a 1024x1024 PNG within the budget: %v", choice, err)
		}
		d.release()
	}
	if held, _, _ := mem.Stats(); held != 0 {
		t.Errorf("decode memory still holds %d bytes after the decodes", held)
	}
}
