package main

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/internal/testkit"
)

// TestGoldenS3 builds golden mixes with some of their datasets on s3://
// (the fixtures uploaded to gofakes3, read through the real SDK client
// from a cold cache) and the others local: every batch digest equals the
// all-local one in testdata/golden. The LeRobot case (video and parquet
// on S3) runs where libavcodec is.
func TestGoldenS3(t *testing.T) {
	data, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	srv := testkit.StartFakeS3(t, testkit.S3Bucket, nil)
	remote := []string{"datasets/tiny_bridge/1.0.0", "datasets/tiny_kuka/1.0.0", "lerobot/lerobot_av1"}
	for _, dir := range remote {
		srv.PutDir(t, testkit.S3Bucket, dir, filepath.Join(data, dir))
	}
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	sources := func(yaml string) string {
		for _, dir := range remote {
			yaml = strings.ReplaceAll(yaml, "$DATA/"+dir, "s3://"+testkit.S3Bucket+"/"+dir)
		}
		return strings.ReplaceAll(yaml, "$DATA", data)
	}
	pick := func(cases []goldenCase, names ...string) []goldenCase {
		var out []goldenCase
		for _, tc := range cases {
			for _, n := range names {
				if tc.name == n {
					out = append(out, tc)
				}
			}
		}
		if len(out) != len(names) {
			t.Fatalf("golden cases %v: found %d", names, len(out))
		}
		return out
	}
	check := func(cases []goldenCase, file string) {
		got := goldenDigests(t, cases, sources)
		want := readGolden(t, file)
		maps.DeleteFunc(want, func(k string, _ goldenDigest) bool {
			name, _, _ := strings.Cut(k, "/")
			return !slices.ContainsFunc(cases, func(tc goldenCase) bool { return tc.name == name })
		})
		compareGolden(t, want, got, file)
		t.Logf("%d batches of %d cases equal the local digests", len(got), len(cases))
	}
	// mix3_weighted: tiny_bridge and tiny_kuka on S3, tiny_table local.
	check(pick(goldenCases, "mix3_weighted", "single_default"), goldenFile)
	if err := av.Available(); err != nil {
		t.Logf("the LeRobot case needs libavcodec: %v", err)
		return
	}
	// lerobot_mixed: lerobot_av1 (video, parquet) and tiny_bridge on S3,
	// lerobot_h264 local.
	check(pick(lerobotGoldenCases, "lerobot_mixed"), goldenLeRobotFile)
	var gets int
	for _, r := range srv.Requests() {
		if r.Method == "GET" {
			gets++
		}
	}
	if gets == 0 {
		t.Fatal("no GET reached the S3 server")
	}
}
