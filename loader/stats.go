package loader

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/oxefs/oxefs/assemble"
	"github.com/oxefs/oxefs/batch"
	"github.com/oxefs/oxefs/frames"
)

// stats is stats.json: the pipeline's live state, with one rank's views
// (Train, Val) or, for the daemon of several ranks, every rank's (Ranks).
// The caches, fetches and samples are the daemon's, shared by every rank.
// Fields are in the order of their JSON names.
type stats struct {
	BadEpisodes  []assemble.BadEpisode `json:"bad_episodes"`
	BuildLatency batch.Summary         `json:"build_latency"`
	DecodeMemory decodeMemoryStats     `json:"decode_memory"`
	DiskCache    diskCacheStats        `json:"disk_cache"`
	Fetch        fetchStats            `json:"fetch"`
	// FramesDecoded counts the frames the train view's builds decoded
	// (each once per batch however many samples use it).
	FramesDecoded int64 `json:"frames_decoded"`
	// FramesCompressed counts the frames the train view's builds served
	// as their JPEG bytes (decode: gpu), each once per batch.
	FramesCompressed  int64                `json:"frames_compressed"`
	Memory            memoryStats          `json:"memory"`
	RAMCache          ramCacheStats        `json:"ram_cache"`
	Ranks             map[string]rankStats `json:"ranks,omitempty"`
	ReadLatency       batch.Summary        `json:"read_latency"`
	SamplesPerDataset map[string]int64     `json:"samples_per_dataset"`
	ServedBytes       int64                `json:"served_bytes"`
	Serving           *servingStats        `json:"serving,omitempty"`
	Substitutions     map[string]int64     `json:"substitutions"`
	Train             *schedulerField      `json:"train,omitempty"`
	UnusableDatasets  map[string]string    `json:"unusable_datasets,omitempty"`
	UptimeS           float64              `json:"uptime_s"`
	Val               *schedulerField      `json:"val,omitempty"`
	// The val view's counters are there, empty or not, when the mix has
	// a val view: hence pointers.
	ValBadEpisodes       *[]assemble.BadEpisode `json:"val_bad_episodes,omitempty"`
	ValSamplesPerDataset *map[string]int64      `json:"val_samples_per_dataset,omitempty"`
	ValSubstitutions     *map[string]int64      `json:"val_substitutions,omitempty"`
	ValUnusableDatasets  map[string]string      `json:"val_unusable_datasets,omitempty"`
	VideoIndex           *videoIndexStats       `json:"video_index,omitempty"`
}

type decodeMemoryStats struct {
	BudgetBytes   int64 `json:"budget_bytes"`
	HeldBytes     int64 `json:"held_bytes"`
	ImagesRefused int64 `json:"images_refused"`
	PeakBytes     int64 `json:"peak_bytes"`
}

type diskCacheStats struct {
	BudgetBytes  int64   `json:"budget_bytes"`
	BytesWritten int64   `json:"bytes_written"`
	Evictions    int64   `json:"evictions"`
	HitRate      float64 `json:"hit_rate"`
	Hits         int64   `json:"hits"`
	Misses       int64   `json:"misses"`
	RangesReused int64   `json:"ranges_reused"`
	// Verified counts the whole objects checked against their source's
	// checksum before they were kept; Damaged the fetches whose bytes
	// failed a check and were fetched again; Rejected the reads that got
	// damaged bytes on every fetch and kept nothing (EIO); Compared the
	// ranges no format check covers that were kept or served once two
	// copies agreed (--verify-ranges twice).
	Verified int64 `json:"verified"`
	Damaged  int64 `json:"damaged"`
	Rejected int64 `json:"rejected"`
	Compared int64 `json:"compared"`
}

type fetchStats struct {
	AbandonedForPriority int64 `json:"abandoned_for_priority"`
	Attempts             int64 `json:"attempts"`
	Bytes                int64 `json:"bytes"`
	Failures             int64 `json:"failures"`
	HeaderHops           int64 `json:"header_hops"`
	RecordBytes          int64 `json:"record_bytes"`
	Records              int64 `json:"records"`
	RecordsFromDownloads int64 `json:"records_from_downloads"`
	Retries              int64 `json:"retries"`
}

type memoryStats struct {
	BudgetBytes  int64 `json:"budget_bytes"`
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	RSSBytes     int64 `json:"rss_bytes"`
	ShmemBytes   int64 `json:"shmem_bytes"`
}

type ramCacheStats struct {
	BytesRead      int64   `json:"bytes_read"`
	EpisodesLoaded int64   `json:"episodes_loaded"`
	HitRate        float64 `json:"hit_rate"`
	Hits           int64   `json:"hits"`
	Misses         int64   `json:"misses"`
}

// rankStats are one rank's views in the daemon's stats.json.
type rankStats struct {
	Train *schedulerStats `json:"train"`
	Val   *schedulerStats `json:"val"`
}

// schedulerStats are one view's scheduler counters.
type schedulerStats struct {
	BudgetBytes   int64 `json:"budget_bytes"`
	BuildErrors   int64 `json:"build_errors"`
	Builds        int64 `json:"builds"`
	Evictions     int64 `json:"evictions"`
	HeldBytes     int64 `json:"held_bytes"`
	InFlightHits  int64 `json:"in_flight_hits"`
	MemoryWaits   int64 `json:"memory_waits"`
	ReadaheadHits int64 `json:"readahead_hits"`
	ReadyHits     int64 `json:"ready_hits"`
	Requests      int64 `json:"requests"`
	Waiting       int   `json:"waiting"`
}

// schedulerField is a rank's view in its stats.json: null when the rank
// has no such view (no val view).
type schedulerField struct{ s *schedulerStats }

func (f *schedulerField) MarshalJSON() ([]byte, error) { return json.Marshal(f.s) }

type servingStats struct {
	Mode             string     `json:"mode"`
	Nodes            *nodeStats `json:"nodes,omitempty"`
	PassthroughOpens *int64     `json:"passthrough_opens,omitempty"`
}

// nodeStats: the batch file nodes held for the kernel (see fs.MaxNodesFor).
type nodeStats struct {
	Held        int   `json:"held"`
	Invalidated int64 `json:"invalidated"`
	Max         int   `json:"max"`
}

type videoIndexStats struct {
	BudgetBytes int64 `json:"budget_bytes"`
	Evicted     int64 `json:"evicted"`
	Files       int   `json:"files"`
	HeldBytes   int64 `json:"held_bytes"`
	Hits        int64 `json:"hits"`
	Parses      int64 `json:"parses"`
}

// Stats returns the top directory's stats.json: the pipeline's live
// state, with the views of the one rank, or with several (MultiRank) of
// every rank under "ranks".
func (p *Pipeline) Stats() []byte {
	if p.MultiRank() {
		return p.stats(nil)
	}
	return p.stats(p.Ranks[0])
}

// RankStats returns rank r's stats.json: the pipeline's live state, with
// r's views. The caches, fetches and samples are the daemon's, shared by
// every rank.
func (p *Pipeline) RankStats(r *Rank) []byte { return p.stats(r) }

func (p *Pipeline) stats(r *Rank) []byte {
	rss, peak, shmem := ReadRSS()
	st := &p.Storage.Fetch
	storeStats, disk := &p.Storage.Store.Stats, &p.Storage.Disk.Stats
	subs, bad := p.Builds.Substitutions()
	perDataset := func(bs *assemble.Stats) map[string]int64 {
		out := map[string]int64{}
		for i, d := range p.Mix.Datasets {
			if n := bs.Samples[i].Load(); n > 0 || bs == p.Builds {
				out[d.Config.Name] = n
			}
		}
		return out
	}
	sched := func(s *batch.Scheduler) *schedulerStats {
		if s == nil {
			return nil
		}
		return &schedulerStats{
			Requests:      s.Stats.Requests.Load(),
			Builds:        s.Stats.Builds.Load(),
			BuildErrors:   s.Stats.BuildErrors.Load(),
			ReadyHits:     s.Stats.ReadyHits.Load(),
			InFlightHits:  s.Stats.InFlightHits.Load(),
			ReadaheadHits: s.Stats.ReadaheadHits.Load(),
			Evictions:     s.Stats.Evictions.Load(),
			MemoryWaits:   s.Stats.MemoryWaits.Load(),
			Waiting:       s.Waiting(),
			HeldBytes:     s.Held(),
			BudgetBytes:   s.Budget(),
		}
	}
	hits, misses := p.Episodes.Stats.Hits.Load(), p.Episodes.Stats.Misses.Load()
	out := stats{
		UptimeS:      time.Since(p.started).Seconds(),
		BuildLatency: p.BuildLatency.Summary(),
		ReadLatency:  p.ReadLatency.Summary(),
		ServedBytes:  p.ServedBytes.Load(),
		RAMCache: ramCacheStats{
			Hits: hits, Misses: misses, HitRate: rate(hits, misses),
			EpisodesLoaded: storeStats.EpisodesLoaded.Load(), BytesRead: storeStats.BytesRead.Load(),
		},
		DiskCache: diskCacheStats{
			Hits: disk.Hits.Load(), Misses: disk.Misses.Load(),
			HitRate:   rate(disk.Hits.Load(), disk.Misses.Load()),
			Evictions: disk.Evictions.Load(), BytesWritten: disk.BytesWritten.Load(),
			BudgetBytes:  p.Storage.Disk.Budget(),
			RangesReused: disk.RangesReused.Load(),
			Verified:     disk.Verified.Load(), Damaged: disk.Damaged.Load(), Rejected: disk.Rejected.Load(),
			Compared: disk.Compared.Load(),
		},
		Fetch: fetchStats{
			Bytes: st.Bytes.Load(), Attempts: st.Attempts.Load(),
			Retries: st.Retries.Load(), Failures: st.Failures.Load(),
			HeaderHops: storeStats.Hops.Load(), Records: disk.RangesFetched.Load(),
			RecordBytes: disk.RangeBytes.Load(), RecordsFromDownloads: disk.RangesFromFill.Load(),
			AbandonedForPriority: disk.Abandoned.Load(),
		},
		Memory:            memoryStats{RSSBytes: rss, PeakRSSBytes: peak, ShmemBytes: shmem, BudgetBytes: p.opts.Mem},
		SamplesPerDataset: perDataset(p.Builds),
		Substitutions:     subs,
		BadEpisodes:       bad,
		DecodeMemory:      decodeMemory(p.decodeMem),
		FramesDecoded:     p.Builds.FramesDecoded.Load(),
		FramesCompressed:  p.Builds.FramesCompressed.Load(),
	}
	if r != nil {
		out.Train, out.Val = &schedulerField{sched(r.Train)}, &schedulerField{sched(r.Val)}
	} else {
		out.Ranks = map[string]rankStats{}
		for _, r := range p.Ranks {
			out.Ranks[strconv.Itoa(r.Rank)] = rankStats{Train: sched(r.Train), Val: sched(r.Val)}
		}
	}
	if is := p.Env.IndexStats(); is.Parses > 0 {
		out.VideoIndex = &videoIndexStats{
			BudgetBytes: is.Bound, HeldBytes: is.Bytes, Files: is.Files,
			Hits: is.Hits, Parses: is.Parses, Evicted: is.Evicted,
		}
	}
	p.infoMu.Lock()
	if s := p.serving; s != nil {
		out.Serving = &servingStats{Mode: s.Mode}
		if s.PassthroughOpens != nil {
			n := s.PassthroughOpens()
			out.Serving.PassthroughOpens = &n
		}
		if s.Nodes != nil {
			held, max, inval := s.Nodes()
			out.Serving.Nodes = &nodeStats{Held: held, Invalidated: inval, Max: max}
		}
	}
	p.infoMu.Unlock()
	if u := p.Builds.Unusable(); len(u) > 0 {
		out.UnusableDatasets = u
	}
	if p.valStats != nil {
		vsubs, vbad := p.valStats.Substitutions()
		vsamples := perDataset(p.valStats)
		out.ValSamplesPerDataset, out.ValSubstitutions, out.ValBadEpisodes = &vsamples, &vsubs, &vbad
		if u := p.valStats.Unusable(); len(u) > 0 {
			out.ValUnusableDatasets = u
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Appendf(nil, `{"error": %q}`, err.Error())
	}
	return append(b, '\n')
}

// decodeMemory reports the decode budget: bytes reserved now and at most,
// and images refused as needing more than all of it.
func decodeMemory(m *frames.DecodeMemory) decodeMemoryStats {
	held, peak, refused := m.Stats()
	return decodeMemoryStats{BudgetBytes: m.Limit(), HeldBytes: held, PeakBytes: peak, ImagesRefused: refused}
}

func rate(hits, misses int64) float64 {
	if hits+misses == 0 {
		return 0
	}
	return float64(hits) / float64(hits+misses)
}
