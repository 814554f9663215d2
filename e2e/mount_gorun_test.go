package e2e

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oxefs/oxefs/internal/testkit"
)

// TestMountUnderGoRunEndsWithIt: `go run . mount DIR`, then SIGTERM to
// the go command. go run does not pass SIGTERM on to the program it runs
// (it dies, and the daemon is re-parented), so the daemon must notice that
// its parent is gone, as --exit-with-parent does: it unmounts and exits 0.
//
// To see the daemon's exit status, this process becomes a child subreaper
// for the test's length (the test runs alone: e2e has no parallel tests),
// so that the orphaned daemon becomes its child and can be waited for.
func TestMountUnderGoRunEndsWithIt(t *testing.T) {
	testkit.RequireFUSE(t)
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH to run the daemon with go run: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })

	dir := filepath.Join(t.TempDir(), "mnt")
	cmd := exec.Command(gobin, "run", ".", "mount", dir, "--cache-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "GOTMPDIR="+t.TempDir()) // what the killed go leaves
	// The daemon inherits the write end: the log is read until both the go
	// command and the daemon have closed it.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var (
		mu     sync.Mutex
		log    bytes.Buffer
		up     = make(chan struct{})
		logEnd = make(chan struct{})
	)
	go func() {
		defer close(logEnd)
		sc := bufio.NewScanner(r)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), "msg=mounted") {
				once.Do(func() { close(up) })
			}
		}
	}()
	stderr := func() string {
		mu.Lock()
		defer mu.Unlock()
		return log.String()
	}
	goExited := make(chan error, 1)
	go func() { goExited <- cmd.Wait() }()
	select {
	case <-up:
	case err := <-goExited:
		t.Fatalf("go run exited before the daemon mounted (%v):\n%s", err, stderr())
	case <-time.After(5 * time.Minute): // go run builds first
		cmd.Process.Kill()
		t.Fatalf("go run: no mount within 5 minutes:\n%s", stderr())
	}
	var info struct {
		PID int `json:"pid"`
	}
	readJSON(t, filepath.Join(dir, "info.json"), &info)
	if info.PID <= 0 || info.PID == cmd.Process.Pid {
		t.Fatalf("info.json pid %d: not the daemon run by go (pid %d)", info.PID, cmd.Process.Pid)
	}
	daemon, err := os.FindProcess(info.PID)
	if err != nil {
		t.Fatal(err)
	}
	// Whatever happens below, no daemon outlives the test.
	defer func() {
		if mounted(dir) {
			daemon.Signal(syscall.SIGKILL)
			exec.Command("fusermount3", "-u", "-z", dir).Run()
		}
	}()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-goExited; err == nil {
		t.Fatalf("go run exited 0 on SIGTERM; want it killed by the signal:\n%s", stderr())
	}
	exited := make(chan syscall.WaitStatus, 1)
	go func() {
		var ws syscall.WaitStatus
		for {
			_, err := syscall.Wait4(info.PID, &ws, 0, nil)
			if err != syscall.EINTR {
				break
			}
		}
		exited <- ws
	}()
	select {
	case ws := <-exited:
		if !ws.Exited() || ws.ExitStatus() != 0 {
			t.Errorf("the daemon ended with %v, want exit status 0:\n%s", ws, stderr())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the daemon still runs 60 s after go run was sent SIGTERM:\n%s", stderr())
	}
	<-logEnd
	if mounted(dir) {
		t.Errorf("%s is still mounted after the daemon exited:\n%s", dir, stderr())
	}
	if !strings.Contains(stderr(), "go run") {
		t.Errorf("the daemon's log does not say why it shut down:\n%s", stderr())
	}
}
