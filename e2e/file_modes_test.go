package e2e

import (
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestWrittenFilesFollowUmask: what oxefs writes for others to read (the
// datasets and mix configs of synth, the disk cache's indexes and
// statistics) gets the mode the umask leaves, as any tool's files do, not
// 0600: another user can read a synth directory under the usual umask 022,
// and umask 077 keeps everything private.
func TestWrittenFilesFollowUmask(t *testing.T) {
	for _, umask := range []fs.FileMode{0o022, 0o027, 0o077} {
		t.Run(fmt.Sprintf("umask %04o", umask), func(t *testing.T) {
			dir := t.TempDir()
			data, cache := filepath.Join(dir, "synth"), filepath.Join(dir, "cache")
			withUmask := func(args ...string) {
				t.Helper()
				cmd := exec.Command("sh", append([]string{"-c", fmt.Sprintf(`umask %04o && exec "$0" "$@"`, umask), oxefsBin}, args...)...)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("oxefs %v under umask %04o: %v\n%s", args, umask, err, out)
				}
			}
			withUmask("synth", data, "--datasets", "2", "--episodes", "3", "--steps", "8")
			// The length index and the statistics, in the disk cache.
			withUmask("stats", "--config", filepath.Join(data, "mix.yaml"), "--cache-dir", cache)
			files := 0
			err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
				if err != nil || path == dir {
					return err
				}
				info, err := e.Info()
				if err != nil {
					return err
				}
				want := 0o666 &^ umask
				if e.IsDir() {
					want = 0o777 &^ umask
				} else {
					files++
				}
				if info.Mode().Perm() != want {
					t.Errorf("%s: mode %04o, want %04o under umask %04o", path, info.Mode().Perm(), want, umask)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if files < 10 {
				t.Fatalf("only %d files written", files)
			}
		})
	}
}
