package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/oxefs/oxefs/internal/testkit"
)

// oxefsBin is the oxefs binary built once for the CLI tests.
var oxefsBin string

// TestMain moves to the module root, where the tests find testdata/ and
// python/ as a user in a checkout would, and builds the binary there once.
func TestMain(m *testing.M) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		panic("go env GOMOD: " + err.Error())
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if err := os.Chdir(root); err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "oxefs-cli-test")
	if err != nil {
		panic(err)
	}
	oxefsBin = filepath.Join(dir, "oxefs")
	if out, err := exec.Command("go", "build", "-o", oxefsBin, ".").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("go build: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runOxefs runs the binary and returns stdout, stderr and the exit code.
func runOxefs(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(oxefsBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// fakeGCS serves local directories from an in-process fake-gcs-server:
// objects maps an object prefix in bucket to a directory.
func fakeGCS(t *testing.T, bucket string, objects map[string]string) *fakestorage.Server {
	t.Helper()
	var objs []fakestorage.Object
	for prefix, dir := range objects {
		for name, b := range testkit.ReadDirFiles(t, dir) {
			objs = append(objs, fakestorage.Object{
				ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: prefix + "/" + name},
				Content:     b,
			})
		}
	}
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		InitialObjects: objs, Scheme: "http", Host: "127.0.0.1", Port: 0, PublicHost: "127.0.0.1",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}
