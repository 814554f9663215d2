package storage

import (
	"bytes"
	"errors"
	"hash"
	"io"
	"strings"
	"testing"
)

// TestCheckWhole: a whole stream whose bytes match the published checksum
// reads to io.EOF; one byte off ends it with a transient ErrChecksum that
// names the object, never io.EOF. A git blob id hashes the size first (the
// id git gives "hello\n").
func TestCheckWhole(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Checksum
		blob bool
	}{
		{"md5", Checksum{Algorithm: MD5, Sum: "b1946ac92492d2347c6235b4d2611184"}, false},
		{"git blob", Checksum{Algorithm: GitBlob, Sum: "ce013625030ba8dba906f756967f9e9ca394464a"}, true},
	} {
		for _, data := range []string{"hello\n", "hellp\n"} {
			var h hash.Hash
			if tc.blob {
				h = NewGitBlobHash(int64(len(data)))
			}
			rc, err := CheckWhole(io.NopCloser(strings.NewReader(data)), "src/obj", tc.c, h)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			switch {
			case data == "hello\n" && (err != nil || string(got) != data):
				t.Errorf("%s: right bytes read as %q, %v", tc.name, got, err)
			case data != "hello\n" && (!errors.Is(err, ErrChecksum) || !IsTransient(err) || !strings.Contains(err.Error(), "src/obj")):
				t.Errorf("%s: damaged bytes: %v, want a transient ErrChecksum naming src/obj", tc.name, err)
			}
		}
	}
	if _, err := CheckWhole(io.NopCloser(strings.NewReader("")), "src/obj", Checksum{Algorithm: "crc64"}, nil); err == nil {
		t.Error("an unknown algorithm was accepted")
	}
}

// BenchmarkCheckWhole is the cost of checking a whole read (4 MiB) as it
// streams, by algorithm: what a cold whole-object read from s3:// or hf://
// pays; warm reads come from the disk cache and pay nothing.
func BenchmarkCheckWhole(b *testing.B) {
	data := make([]byte, 4<<20)
	buf := make([]byte, 1<<20)
	for _, alg := range []string{"none", MD5, SHA256, GitBlob} {
		b.Run(alg, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var rc io.ReadCloser = io.NopCloser(bytes.NewReader(data))
				switch alg {
				case GitBlob:
					rc, _ = CheckWhole(rc, "obj", Checksum{Algorithm: alg}, NewGitBlobHash(int64(len(data))))
				case MD5, SHA256:
					rc, _ = CheckWhole(rc, "obj", Checksum{Algorithm: alg}, nil)
				}
				for {
					if _, err := rc.Read(buf); err != nil {
						break
					}
				}
			}
		})
	}
}
