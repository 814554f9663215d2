package loader

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/s3"
)

// TestS3ColdStartFetchesBatch0: from an empty cache, the fetches batch 0
// of a mix on s3:// makes (the build's own, format.FetchEpisodes) read the
// records of batch 0's episodes, each with one ranged GET of exactly its
// bytes, plus 12-byte header hops to index the shards: never a whole
// shard, and far less than the shards hold. Requests and bytes are counted
// at gofakes3.
func TestS3ColdStartFetchesBatch0(t *testing.T) {
	md := testkit.LoadManifest(t).Datasets["tiny_bridge"]
	srv := testkit.StartFakeS3(t, testkit.S3Bucket, nil)
	srv.PutDir(t, testkit.S3Bucket, "tiny_bridge/1.0.0", filepath.Join(fixtures, "tiny_bridge/1.0.0"))
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	st, err := OpenStorage(StorageOptions{CacheDir: t.TempDir(), Disk: 1 << 30, Log: testkit.TestLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mix, err := openYAML(t, st.Store, `
batch_size: 6
image_size: [16, 16]
samples_per_episode: 2
datasets:
  - source: s3://`+testkit.S3Bucket+`/tiny_bridge/1.0.0
    image_key: steps/observation/image
`, MixOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	samples := mix.Train.Batch(0, nil)
	if err := format.FetchEpisodes(context.Background(), mix.EpisodeRefs(samples)); err != nil {
		t.Fatal(err)
	}

	// What batch 0 needs: the framed bytes of each distinct episode's
	// record, from the local copy's index.
	type rec struct{ file, rng string }
	want := map[rec]bool{}
	var wantBytes, shardBytes int64
	shards := map[string]bool{}
	for _, s := range samples {
		file := md.Splits[s.Episode.Split].Shards[s.Episode.Shard].File
		spans := localSpans(t, filepath.Join(fixtures, "tiny_bridge/1.0.0", file))
		sp := spans[s.Episode.Record]
		r := rec{file, "bytes=" + strconv.FormatInt(sp[0], 10) + "-" + strconv.FormatInt(sp[1]-1, 10)}
		if !want[r] {
			want[r] = true
			wantBytes += sp[1] - sp[0]
		}
		if !shards[file] {
			shards[file] = true
			fi, err := os.Stat(filepath.Join(fixtures, "tiny_bridge/1.0.0", file))
			if err != nil {
				t.Fatal(err)
			}
			shardBytes += fi.Size()
		}
	}
	var recordBytes, hopBytes, hops, gets int64
	got := map[rec]bool{}
	for _, r := range srv.Requests() {
		if r.Method != "GET" {
			continue
		}
		gets++
		file := r.Path[strings.LastIndex(r.Path, "/")+1:]
		if !strings.Contains(file, ".tfrecord-") {
			t.Errorf("GET %s (%s) during batch 0's fetch: not a shard", r.Path, r.Range)
			continue
		}
		switch {
		case r.Range == "" || strings.HasSuffix(r.Range, "-"):
			t.Errorf("GET %s with range %q: a whole or open-ended shard read", r.Path, r.Range)
		case r.Bytes == 12:
			hops++
			hopBytes += r.Bytes
		case want[rec{file, r.Range}]:
			got[rec{file, r.Range}] = true
			recordBytes += r.Bytes
		default:
			t.Errorf("GET %s %s (%d bytes): not a record of batch 0's episodes", r.Path, r.Range, r.Bytes)
		}
	}
	if len(got) != len(want) || recordBytes != wantBytes {
		t.Errorf("fetched %d records, %d bytes; batch 0 needs %d records, %d bytes", len(got), recordBytes, len(want), wantBytes)
	}
	total := recordBytes + hopBytes
	if total*2 > shardBytes {
		t.Errorf("batch 0 fetched %d bytes of %d in its shards", total, shardBytes)
	}
	t.Logf("batch 0 (%d samples, %d episodes in %d shards): %d GETs, %d bytes (%d record bytes, %d header hops); its shards hold %d bytes",
		len(samples), len(want), len(shards), gets, total, recordBytes, hops, shardBytes)
}

// TestS3VideoRewritten: a remote video file rewritten with other bytes on
// s3:// (a new ETag in an unversioned bucket) is a read error that says
// so, never frames decoded from new bytes through the old sample table.
func TestS3VideoRewritten(t *testing.T) {
	requireVideo(t)
	ctx := context.Background()
	objects := testkit.ReadDirFiles(t, filepath.Join(lerobotFixtures, "lerobot_av1"))
	srv := testkit.StartFakeS3(t, testkit.S3Bucket, nil)
	for name, b := range objects {
		srv.Put(t, testkit.S3Bucket, path.Join(testkit.S3Prefix, name), b)
	}
	src := s3.NewWithConfig(srv.Config(), testkit.S3Bucket, testkit.S3Prefix, storage.Options{})
	st, data := openRemote(t, src, t.TempDir(), 1<<30)
	defer st.Close()
	key := episodeKeys(t, mustLeRobot(t, data))[0]
	ep, err := data.Episode(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	const file = "videos/observation.images.top/chunk-000/file-000.mp4"
	other := bytes.Clone(objects[file])
	other[len(other)/2] ^= 0xff
	srv.Put(t, testkit.S3Bucket, path.Join(testkit.S3Prefix, file), other)
	v, err := ep.Feature("observation.images.top")
	if err != nil {
		t.Fatal(err)
	}
	dec, err := frames.NewDecoder(frames.DecoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	out := make([]byte, 48*64*3)
	err = (&frames.Video{Key: "top", Steps: ep.Steps(), Stream: v.(episode.Video)}).Decode(ctx, dec, []int{0}, frames.Slot{Buf: out, Frames: 1, H: 48, W: 64})
	if err == nil || !strings.Contains(err.Error(), "changed since its sample table was read") || errors.Is(err, episode.ErrCorrupt) {
		t.Fatalf("decoding from a rewritten file: %v; want a read error saying it changed", err)
	}
	t.Log(err)
}

// localSpans returns the [start, end) of each framed record of a local
// TFRecord file: an 8-byte little-endian length and its 4-byte CRC, the
// data, the data's 4-byte CRC.
func localSpans(t *testing.T, file string) [][2]int64 {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var spans [][2]int64
	for off := int64(0); off < int64(len(b)); {
		if off+12 > int64(len(b)) {
			t.Fatalf("%s: a record header cut at byte %d", file, off)
		}
		end := off + 12 + int64(binary.LittleEndian.Uint64(b[off:])) + 4
		spans = append(spans, [2]int64{off, end})
		off = end
	}
	return spans
}
