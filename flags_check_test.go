package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFlagCheck(t *testing.T) {
	good := func() pipelineFlags {
		return pipelineFlags{
			Mem: 4 << 30, Disk: 50 << 30, Workers: 2, Readahead: 8,
			FetchStall: 30 * time.Second, FetchTimeout: 2 * time.Minute,
		}
	}
	machine := machineMemory{Bytes: 23 << 30, Source: "MemTotal in /proc/meminfo"}
	config := filepath.Join(t.TempDir(), "mix.yaml")
	if err := os.WriteFile(config, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		edit    func(*pipelineFlags)
		machine machineMemory
		want    string // "" for no error
	}{
		{"defaults", func(*pipelineFlags) {}, machine, ""},
		{"config present", func(f *pipelineFlags) { f.Config = config }, machine, ""},
		{"config missing", func(f *pipelineFlags) { f.Config = config + ".nope" }, machine, "--config " + config + ".nope: no such file"},
		{"mem at the machine's size", func(f *pipelineFlags) { f.Mem = 23 << 30 }, machine, ""},
		{"mem above the machine", func(f *pipelineFlags) { f.Mem = 100 << 30 }, machine,
			"--mem 100.0 GiB is more than the memory this machine gives the daemon, 23.0 GiB (MemTotal in /proc/meminfo)"},
		{"mem above a cgroup limit", func(f *pipelineFlags) { f.Mem = 3 << 30 }, machineMemory{Bytes: 2 << 30, Source: "cgroup limit in /sys/fs/cgroup/memory.max"},
			"2.0 GiB (cgroup limit in /sys/fs/cgroup/memory.max)"},
		{"machine memory unknown", func(f *pipelineFlags) { f.Mem = 100 << 30 }, machineMemory{}, ""},
		{"no disk", func(f *pipelineFlags) { f.Disk = 0 }, machine, "--disk 0 B: must be more than 0"},
		{"decoder go", func(f *pipelineFlags) { f.Decoder = "go" }, machine, ""},
		{"decoder empty means auto", func(f *pipelineFlags) { f.Decoder = "" }, machine, ""},
		{"decoder unknown", func(f *pipelineFlags) { f.Decoder = "jpeg" }, machine, `--decoder "jpeg" (or OXEFS_DECODER): must be auto, turbo or go`},
		{"no workers", func(f *pipelineFlags) { f.Workers = 0 }, machine, "--workers 0: must be at least 1"},
		{"negative readahead", func(f *pipelineFlags) { f.Readahead = -1 }, machine, "--readahead -1: must be 0 or more"},
		{"no readahead", func(f *pipelineFlags) { f.Readahead = 0 }, machine, ""},
		{"fetch-stall 0", func(f *pipelineFlags) { f.FetchStall = 0 }, machine, "--fetch-stall 0s: must be more than 0"},
		{"negative fetch-stall", func(f *pipelineFlags) { f.FetchStall = -time.Second }, machine, "--fetch-stall -1s: must be more than 0"},
		{"fetch-timeout 0", func(f *pipelineFlags) { f.FetchTimeout = 0 }, machine, "--fetch-timeout 0s: must be more than 0"},
		{"negative fetch-timeout", func(f *pipelineFlags) { f.FetchTimeout = -time.Minute }, machine, "--fetch-timeout -1m0s: must be more than 0"},
		{"verify-ranges off", func(f *pipelineFlags) { f.VerifyRanges = "off" }, machine, ""},
		{"verify-ranges twice", func(f *pipelineFlags) { f.VerifyRanges = "twice" }, machine, ""},
		{"verify-ranges unknown", func(f *pipelineFlags) { f.VerifyRanges = "thrice" }, machine, `--verify-ranges "thrice": must be twice (`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := good()
			tc.edit(&f)
			err := f.check(tc.machine)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("check: %v, want no error", err)
			case tc.want != "" && err == nil:
				t.Fatalf("check: no error, want %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("check: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestReadMachineMemory(t *testing.T) {
	const meminfo = "MemTotal:       24684092 kB\nMemFree:         1000000 kB\n"
	total := int64(24684092) << 10
	for _, tc := range []struct {
		name   string
		files  map[string]string
		want   int64
		source string
	}{
		{"meminfo only", map[string]string{"proc/meminfo": meminfo}, total, "MemTotal in /proc/meminfo"},
		{"nothing readable", map[string]string{}, 0, ""},
		{"cgroup v2 limit", map[string]string{
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "0::/system.slice/job.scope\n",
			"sys/fs/cgroup/system.slice/job.scope/memory.max": "max\n",
			"sys/fs/cgroup/system.slice/memory.max":           "2147483648\n",
		}, 2 << 30, "cgroup limit in /sys/fs/cgroup/system.slice/memory.max"},
		{"cgroup v2 in a container sees its root", map[string]string{
			"proc/meminfo":             meminfo,
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "1073741824\n",
		}, 1 << 30, "cgroup limit in /sys/fs/cgroup/memory.max"},
		{"cgroup v2 unlimited", map[string]string{
			"proc/meminfo":             meminfo,
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "max\n",
		}, total, "MemTotal in /proc/meminfo"},
		{"cgroup v1 limit, path not visible in the container", map[string]string{
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "5:devices:/\n4:memory:/docker/abc\n0::/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "536870912\n",
		}, 512 << 20, "cgroup limit in /sys/fs/cgroup/memory/memory.limit_in_bytes"},
		{"cgroup v1 no limit", map[string]string{
			"proc/meminfo":     meminfo,
			"proc/self/cgroup": "4:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "9223372036854771712\n",
		}, total, "MemTotal in /proc/meminfo"},
		{"cgroup limit above the machine", map[string]string{
			"proc/meminfo":             meminfo,
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "107374182400\n",
		}, total, "MemTotal in /proc/meminfo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, text := range tc.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := readMachineMemory(root)
			if got.Bytes != tc.want || got.Source != tc.source {
				t.Fatalf("readMachineMemory = %+v, want %d from %q", got, tc.want, tc.source)
			}
		})
	}
}

// TestFusectlMessage: the line logged when the daemon exits with files
// still open and cannot cut the connection says what it means for the
// readers and how to have the connection cut at once.
func TestFusectlMessage(t *testing.T) {
	for _, want := range []string{"files still open", "ENOTCONN", "SIGBUS", "/sys/fs/fuse/connections", "mount -t fusectl"} {
		if !strings.Contains(fusectlMissing, want) {
			t.Errorf("the message lacks %q: %s", want, fusectlMissing)
		}
	}
}
