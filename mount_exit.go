package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// How a daemon started for a trainer ends with it, and what it leaves:
// --exit-with-parent follows the one process that started it (and is on
// by itself under `go run`, which does not pass SIGTERM on),
// --exit-when-unlocked follows every process that holds a lock on a file
// (the local ranks of a torchrun job share one daemon that way), and
// --remove-on-exit removes the directory the caller made for the
// mountpoint, log and lock, so that a trainer killed with SIGKILL leaves
// nothing behind.

// startedByGoRun reports whether the process ppid is `go run`, read from
// /proc/PPID/cmdline. go run ignores SIGINT (a terminal's Ctrl-C reaches
// the daemon itself) but dies of SIGTERM without passing it on, which
// would leave the daemon and its mount behind: a daemon that go run
// started therefore follows it as --exit-with-parent does.
func startedByGoRun(ppid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", ppid))
	return err == nil && isGoRun(cmdline)
}

// isGoRun reports whether a /proc cmdline (NUL-separated arguments) is
// the go command's run: the go tool by any path, then "run".
func isGoRun(cmdline []byte) bool {
	args := strings.Split(string(cmdline), "\x00")
	return len(args) >= 2 && filepath.Base(args[0]) == "go" && args[1] == "run"
}

// watchLock returns a channel closed once the daemon can take an
// exclusive flock on the file at path, that is once no other process
// holds a lock on it (each user holds a shared one, and the kernel drops
// it when the user exits, SIGKILL included). The daemon then keeps the
// exclusive lock until it exits, so that a process that comes to share
// the daemon meanwhile waits for it to end and starts another.
func watchLock(ctx context.Context, path string) (<-chan struct{}, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--exit-when-unlocked: %w", err)
	}
	gone := make(chan struct{})
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil {
				close(gone) // f stays open: the lock is held until exit
				return
			}
			select {
			case <-ctx.Done():
				f.Close()
				return
			case <-t.C:
			}
		}
	}()
	return gone, nil
}

// checkRemoveDir refuses a --remove-on-exit that is not a directory, or
// that is the root.
func checkRemoveDir(dir string) error {
	if dir == "" {
		return nil
	}
	if filepath.Clean(dir) == "/" {
		return errors.New("--remove-on-exit /: refusing to remove the root; give the directory made for this daemon")
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("--remove-on-exit %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--remove-on-exit %s: not a directory", dir)
	}
	return nil
}

// removeOwnDir removes dir, the files and empty directories directly in
// it (the emptied mountpoint, a log, a lock file), and nothing deeper:
// it never descends, so a directory that still holds something or is
// still a mount point (EBUSY) is left, with a warning naming it, and so
// is a dir that is itself a mount point.
func removeOwnDir(log *slog.Logger, dir string) {
	var st, up syscall.Stat_t
	if syscall.Stat(dir, &st) != nil || syscall.Stat(filepath.Join(dir, ".."), &up) != nil || st.Dev != up.Dev {
		log.Warn("--remove-on-exit: not removing the directory (gone, or a mount point)", "dir", dir)
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		log.Warn("--remove-on-exit", "dir", dir, "err", err)
		return
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			log.Warn("--remove-on-exit: leaving the directory", "dir", dir, "err", err)
			return
		}
	}
	if err := os.Remove(dir); err != nil {
		log.Warn("--remove-on-exit", "dir", dir, "err", err)
	}
}
