package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "info.json")
	for _, data := range []string{"first", "second, longer"} {
		if err := Write(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != data {
			t.Errorf("read %q, wrote %q", got, data)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want only the file", len(entries))
	}
}

// TestWriteMakesDirectory: Write makes the directories path needs; where
// none can be made, it fails and leaves nothing.
func TestWriteMakesDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "absent", "info.json")
	if err := Write(path, []byte("x")); err != nil {
		t.Fatalf("Write into a missing directory: %v", err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "x" {
		t.Fatalf("read %q, %v; wrote %q", got, err, "x")
	}
	blocked := filepath.Join(dir, "file")
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(blocked, "info.json")
	if err := Write(path, []byte("x")); err == nil {
		t.Fatal("Write under a regular file succeeded")
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("Write under a regular file left a file")
	}
}

func TestWriteJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d", "v.json")
	if err := WriteJSON(path, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != `{"a":1}` {
		t.Errorf("read %q, %v; want {\"a\":1}", got, err)
	}
}

// TestWriteMode: the file gets 0666 less the process's umask (read from
// /proc, not set: the umask is the whole process's), as os.Create gives,
// not os.CreateTemp's 0600.
func TestWriteMode(t *testing.T) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status to read the umask from: %v", err)
	}
	var umask fs.FileMode
	found := false
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			u, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			umask, found = fs.FileMode(u), true
		}
	}
	if !found {
		t.Skip("/proc/self/status has no Umask line (a kernel before 4.7)")
	}
	path := filepath.Join(t.TempDir(), "info.json")
	if err := Write(path, []byte("x")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := 0o666 &^ umask; st.Mode().Perm() != want {
		t.Errorf("mode %04o, want %04o (0666 less the umask %04o)", st.Mode().Perm(), want, umask)
	}
}
