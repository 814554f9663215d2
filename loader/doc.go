// Package loader is oxefs's composition root: the one place that wires
// storage → format → plan → frames → scheduler for the mount, the
// benchmark and `oxefs warm`.
//
//   - Storage: each dataset's location becomes a storage backend
//     (storage.Open picks it by URL scheme), wrapped in the retry and
//     rate-limit decorators, and in the disk cache when its objects are not
//     local files.
//   - Format: format.Open reads the backend in the first registered format
//     whose probe claims it (package format/formats registers them; this
//     package imports it). The rest of the pipeline sees the neutral model
//     (package episode) and asks for what only some formats do (episode
//     lengths, shard prefetch, offline records) through package format's
//     capability interfaces; it never names a format.
//   - Config: the mix's datasets are checked against their features with
//     package config's rules (OpenMix), every problem with its YAML line.
//   - Plan: the datasets' shapes (segments, lengths) go to package plan,
//     one plan per view.
//   - Frames and pairs: one Assembler per dataset, one decoder Worker per
//     worker goroutine (assemble.Pool).
//   - Scheduler: one batch.Scheduler per view, whose BuildFunc is a
//     assemble.Builder's: plan the batch once, fetch its remote episodes
//     all at once (format.FetchEpisodes; formats without a fetcher have
//     their episodes loaded and their format.EpisodeBytes fetched: see
//     fetchbatch.go), load them, substitute the unusable ones
//     (counted, deterministic), assemble every sample in parallel on the
//     shared assemble.Pool.
//
// Pipeline owns the --mem budget and its split (batches, parsed episodes,
// decode, headroom), the readahead prefetch of remote shards, and the
// documents info.json and stats.json that report all of it.
//
// loader may import every package below it; nothing but package main
// imports it (internal/layers checks both).
package loader
