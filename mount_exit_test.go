package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestWatchLock: the daemon's --exit-when-unlocked waits while a user
// holds a shared lock, fires once the last user lets go, and then holds
// the file exclusively, so that a newcomer cannot join a daemon that is
// shutting down.
func TestWatchLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.lock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	users := make([]*os.File, 2)
	for i := range users {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
			t.Fatal(err)
		}
		users[i] = f
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone, err := watchLock(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range users {
		select {
		case <-gone:
			t.Fatalf("the lock was reported free with %d of %d users holding it", len(users)-i, len(users))
		case <-time.After(600 * time.Millisecond): // more than two polls
		}
		if err := syscall.Flock(int(u.Fd()), syscall.LOCK_UN); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("no report 10 s after the last user let go")
	}
	late, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	if err := syscall.Flock(int(late.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		t.Fatal("a newcomer took a shared lock on a daemon that is shutting down")
	}
	if _, err := watchLock(ctx, filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing lock file was accepted")
	}
}

// TestRemoveOwnDir: --remove-on-exit removes the files and empty
// directories directly in its directory, then the directory, and never
// descends: a directory that still holds something is left whole.
func TestRemoveOwnDir(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	root := t.TempDir()
	own := filepath.Join(root, "own")
	for _, d := range []string{own, filepath.Join(own, "mnt")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"daemon.log", "users.lock"} {
		if err := os.WriteFile(filepath.Join(own, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removeOwnDir(log, own)
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Fatalf("%s is still there (%v)", own, err)
	}

	kept := filepath.Join(root, "kept")
	deep := filepath.Join(kept, "sub", "data.bin")
	if err := os.MkdirAll(filepath.Dir(deep), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(deep, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	removeOwnDir(log, kept)
	if _, err := os.Stat(deep); err != nil {
		t.Fatalf("a file two levels down was removed: %v", err)
	}

	for _, bad := range []string{"/", "//", filepath.Join(root, "missing"), deep} {
		if err := checkRemoveDir(bad); err == nil {
			t.Errorf("--remove-on-exit %s was accepted", bad)
		}
	}
}

// TestIsGoRun: the daemon follows its parent when the parent's command
// line is the go command's run, by any path, and not otherwise.
func TestIsGoRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cmdline string
		want    bool
	}{
		{"go run", "go\x00run\x00.\x00mount\x00/tmp/oxe\x00", true},
		{"go by path", "/usr/local/go/bin/go\x00run\x00.\x00mount\x00/tmp/oxe\x00", true},
		{"go run of a file", "go\x00run\x00main.go\x00", true},
		{"go build", "go\x00build\x00-o\x00oxefs\x00.\x00", false},
		{"go test", "go\x00test\x00./e2e\x00", false},
		{"a shell", "/bin/bash\x00-c\x00go run . mount /tmp/oxe\x00", false},
		{"python", "/usr/bin/python3\x00train.py\x00", false},
		{"a go-named program", "gopls\x00run\x00", false},
		{"go alone", "go\x00", false},
		{"empty (a zombie)", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := isGoRun([]byte(tc.cmdline)); got != tc.want {
				t.Errorf("isGoRun(%q) = %v, want %v", tc.cmdline, got, tc.want)
			}
		})
	}
}
