package av

import (
	"testing"
)

// FuzzDecode sends outside bytes to each decoder, after the first keyframe
// of its clip: any error is fine, a crash or hang is not.
func FuzzDecode(f *testing.F) {
	clips := make([]*clip, len(clipNames))
	for i, name := range clipNames {
		clips[i] = loadClip(f, name)
		for _, s := range clips[i].samples[1:4] {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, pkt []byte) {
		c := clips[int(which)%len(clips)]
		d := decoder(t, c)
		if err := d.Send(c.samples[0]); err != nil {
			t.Fatal(err)
		}
		for _, p := range [][]byte{pkt, nil} {
			if err := d.Send(p); err != nil {
				continue
			}
			for {
				fr, err := d.Receive()
				if err != nil || fr == nil {
					break
				}
				if fr.Format == YUV420P && fr.Height%2 == 0 {
					if err := fr.RGB(make([]byte, fr.Width*fr.Height*3)); err != nil {
						t.Errorf("RGB: %v", err)
					}
				}
			}
		}
	})
}
