// Command episodebytes prints what a set of episodes costs to fetch from
// local TFDS datasets: the bytes of their TFRecord records (framing
// included, as a ranged fetch of each record moves them) and the header
// hops needed to reach them, for the cold-start bound of scripts/cold.sh.
//
//	episodebytes -data /tmp/oxefs-cold/four mnt/batches/000000.json
//	episodebytes -data DIR synth_bridge/train/1/3 synth_fractal/train/0/0
//
// Arguments are batch metadata files (a mount's batches/NNNNNN.json, whose
// episode_id array names each sample's episode) or episode ids
// (dataset/split/shard/record). A dataset is read from DIR/<dataset>/<version>.
//
// It prints one JSON object: samples and distinct episodes, their record
// bytes, the shards they lie in, and hops: over those shards, the most
// record headers to read, one after another from the shard's start, to
// reach the last record used (its index + 1). Shards are indexed
// concurrently, so hops is the critical path of an index built by hopping
// from header to header.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/oxefs/oxefs/format/rlds/tfds"
	"github.com/oxefs/oxefs/format/rlds/tfrecord"
)

func main() {
	data := flag.String("data", "", "directory holding DIR/<dataset>/<version>/ of each dataset")
	flag.Parse()
	if *data == "" || flag.NArg() == 0 {
		log.Fatal("usage: episodebytes -data DIR (BATCH.json | dataset/split/shard/record)...")
	}
	var ids []string
	for _, arg := range flag.Args() {
		if !strings.HasSuffix(arg, ".json") {
			ids = append(ids, arg)
			continue
		}
		more, err := batchEpisodes(arg)
		if err != nil {
			log.Fatal(err)
		}
		ids = append(ids, more...)
	}
	sum, err := measure(*data, ids)
	if err != nil {
		log.Fatal(err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(sum); err != nil {
		log.Fatal(err)
	}
}

// Summary is what the episodes cost.
type Summary struct {
	Samples  int   `json:"samples"`
	Episodes int   `json:"episodes"`
	Bytes    int64 `json:"bytes"`
	Shards   int   `json:"shards"`
	Hops     int64 `json:"hops"`
	// DatasetBytes splits Bytes by dataset.
	DatasetBytes map[string]int64 `json:"dataset_bytes"`
}

// batchEpisodes reads the episode_id array of a batch's metadata file.
func batchEpisodes(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var meta struct {
		EpisodeID []string `json:"episode_id"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(meta.EpisodeID) == 0 {
		return nil, fmt.Errorf("%s: no episode_id (the mix's meta must be full)", path)
	}
	return meta.EpisodeID, nil
}

// episodeRef is a parsed episode id.
type episodeRef struct {
	dataset, split string
	shard          int
	record         int
}

func parseID(id string) (episodeRef, error) {
	parts := strings.Split(id, "/")
	if len(parts) != 4 {
		return episodeRef{}, fmt.Errorf("episode id %q: want dataset/split/shard/record", id)
	}
	shard, err1 := strconv.Atoi(parts[2])
	record, err2 := strconv.Atoi(parts[3])
	if err1 != nil || err2 != nil || shard < 0 || record < 0 {
		return episodeRef{}, fmt.Errorf("episode id %q: shard and record must be numbers", id)
	}
	return episodeRef{dataset: parts[0], split: parts[1], shard: shard, record: record}, nil
}

type shardKey struct {
	dataset, split string
	shard          int
}

// measure sums the records of the distinct episodes among ids.
func measure(data string, ids []string) (*Summary, error) {
	sum := &Summary{Samples: len(ids), DatasetBytes: map[string]int64{}}
	seen := map[episodeRef]bool{}
	lastRecord := map[shardKey]int{}
	for _, id := range ids {
		ref, err := parseID(id)
		if err != nil {
			return nil, err
		}
		if seen[ref] {
			continue
		}
		seen[ref] = true
		k := shardKey{ref.dataset, ref.split, ref.shard}
		if last, ok := lastRecord[k]; !ok || ref.record > last {
			lastRecord[k] = ref.record
		}
	}
	sum.Episodes = len(seen)
	sum.Shards = len(lastRecord)
	spans := map[shardKey][]tfrecord.Span{}
	for k, last := range lastRecord {
		s, err := indexShard(data, k)
		if err != nil {
			return nil, err
		}
		spans[k] = s
		sum.Hops = max(sum.Hops, int64(last)+1)
	}
	for ref := range seen {
		s := spans[shardKey{ref.dataset, ref.split, ref.shard}]
		if ref.record >= len(s) {
			return nil, fmt.Errorf("%s/%s/%d/%d: the shard has %d records", ref.dataset, ref.split, ref.shard, ref.record, len(s))
		}
		n := s[ref.record].End() - s[ref.record].Offset
		sum.Bytes += n
		sum.DatasetBytes[ref.dataset] += n
	}
	return sum, nil
}

// indexShard reads the record spans of one local shard.
func indexShard(data string, k shardKey) ([]tfrecord.Span, error) {
	infos, err := filepath.Glob(filepath.Join(data, k.dataset, "*", "dataset_info.json"))
	if err != nil {
		return nil, err
	}
	if len(infos) != 1 {
		return nil, fmt.Errorf("dataset %s: want one %s/%s/<version>/dataset_info.json, found %d", k.dataset, data, k.dataset, len(infos))
	}
	b, err := os.ReadFile(infos[0])
	if err != nil {
		return nil, err
	}
	info, err := tfds.ParseDatasetInfo(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", infos[0], err)
	}
	names, err := info.ShardNames(k.split)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", infos[0], err)
	}
	if k.shard >= len(names) {
		return nil, fmt.Errorf("dataset %s split %s: shard %d of %d", k.dataset, k.split, k.shard, len(names))
	}
	f, err := os.Open(filepath.Join(filepath.Dir(infos[0]), names[k.shard]))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	spans, err := tfrecord.Index(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return spans, nil
}
