package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDeadSourceBounded: a source on each scheme (gs://, s3://, hf://)
// whose endpoint refuses connections, accepts them and never answers, or
// does not resolve, makes `mount` and `inspect` fail within the README's
// bound, --fetch-timeout + --fetch-stall (set small here; the test allows
// twice that and a second for a loaded machine), with an error naming the
// failing request. Opening a source probes its format once: an outage
// met by the LeRobot probe (meta/info.json) is the error, and the RLDS
// probe never waits out a second budget (dataset_info.json is never
// asked); a host that does not resolve is not retried at all, and a
// refused connection is retried once: the error says it gave up after 2
// attempts, and no retry line is of a later attempt (a refused request
// retried until the bound would log attempt=2, 3...).
func TestDeadSourceBounded(t *testing.T) {
	const (
		timeout = 2 * time.Second
		stall   = time.Second
		promise = timeout + stall
	)
	refused := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}
	hanging := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var conns []net.Conn
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				conns = append(conns, c) // read nothing, answer nothing
			}
		}()
		t.Cleanup(func() {
			l.Close()
			<-done
			for _, c := range conns {
				c.Close()
			}
		})
		return l.Addr().String()
	}
	unresolvable := func(*testing.T) string { return "oxefs-dead-source.invalid:9" }

	schemes := []struct {
		name, source string
		env          func(addr string) []string
	}{
		{"gs", "gs://robotics/ds/1.0.0", func(addr string) []string { return []string{"STORAGE_EMULATOR_HOST=" + addr} }},
		{"s3", "s3://robotics/ds/1.0.0", func(addr string) []string {
			return []string{"AWS_ENDPOINT_URL_S3=http://" + addr, "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
				"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
		}},
		{"hf", "hf://datasets/oxe/ds", func(addr string) []string { return []string{"HF_ENDPOINT=http://" + addr, "HF_TOKEN="} }},
	}
	faults := []struct {
		name  string
		addr  func(*testing.T) string
		want  []string // in the error
		retry bool     // retried (WARN lines) before giving up
		once  bool     // retried once at most: no retry line of attempt 2 or later
	}{
		{"refused", refused, []string{"meta/info.json", "connection refused", "giving up after 2 attempts"}, true, true},
		{"hanging", hanging, []string{"meta/info.json", "giving up after"}, true, false},
		{"unresolvable", unresolvable, []string{"oxefs-dead-source.invalid", "no such host"}, false, true},
	}
	for _, sc := range schemes {
		for _, f := range faults {
			for _, cmd := range []string{"mount", "inspect"} {
				t.Run(sc.name+"/"+f.name+"/"+cmd, func(t *testing.T) {
					addr := f.addr(t)
					env := sc.env(addr)
					bounds := []string{"--cache-dir", t.TempDir(), "--fetch-timeout", timeout.String(), "--fetch-stall", stall.String()}
					start := time.Now()
					var stderr string
					var code int
					if cmd == "mount" {
						cfg := filepath.Join(t.TempDir(), "mix.yaml")
						mix := fmt.Sprintf("batch_size: 8\nimage_size: [32, 32]\ndatasets:\n  - source: %s\n    anonymous: true\n", sc.source)
						if err := os.WriteFile(cfg, []byte(mix), 0o644); err != nil {
							t.Fatal(err)
						}
						stderr, code = mountRefusedEnv(t, t.TempDir(), env, append([]string{"--config", cfg}, bounds...)...)
					} else {
						_, stderr, code = runOxefs(t, env, append([]string{"inspect", sc.source, "--anonymous"}, bounds...)...)
					}
					took := time.Since(start)
					if code == 0 {
						t.Fatalf("%s succeeded against a dead source:\n%s", cmd, stderr)
					}
					t.Logf("%s failed after %v", cmd, took.Round(time.Millisecond))
					if took > 2*promise+time.Second {
						t.Errorf("%s took %v to fail; the bound is --fetch-timeout + --fetch-stall = %v", cmd, took, promise)
					}
					var errLines []string
					retried := false
					for line := range strings.Lines(stderr) {
						if strings.Contains(line, "retrying") {
							retried = true
							if f.once && !strings.Contains(line, "attempt=1 ") {
								t.Errorf("a request retried more than once:\n%s", line)
							}
						}
						if !strings.Contains(line, "level=") || strings.Contains(line, "level=ERROR") {
							errLines = append(errLines, line)
						}
					}
					msg := strings.Join(errLines, "")
					for _, w := range f.want {
						if !strings.Contains(msg, w) {
							t.Errorf("the error lacks %q:\n%s", w, stderr)
						}
					}
					if f.retry && strings.Contains(stderr, "dataset_info.json") {
						t.Errorf("after the LeRobot probe gave up, RLDS was tried too:\n%s", stderr)
					}
					if retried != f.retry {
						t.Errorf("retried: %v, want %v:\n%s", retried, f.retry, stderr)
					}
				})
			}
		}
	}
}
