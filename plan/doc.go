// Package plan owns the batch plan: a pure, random-access function from
// (seed, dataset shapes, batch index) to the samples of that batch, with
// exact dataset proportions, epoch coverage and shard-window locality. A
// dataset's shape is what the plan needs of it and nothing more: its
// weight, its segments (runs of episodes of a shard) and, for
// samples_per_episode 0, each episode's length. A Sample names its episode
// by a format-neutral episode.Key, a unit and a Key from which package
// pairs draws t and the offset (keyed.Draw).
//
// plan does no I/O. It imports the neutral model (episode), the keyed hash
// (keyed) and the config's Weight (config), and must not import storage, a
// format, frames, pairs or anything above them; internal/layers checks it.
// Opening the datasets that give the shapes is the composition root's job
// (package loader).
//
// # Proportions
//
// Weights are normalised to exact rationals w_d (the YAML decimal "0.54" is
// 27/50; proportionate weights share what the numeric ones leave in
// proportion to sample units). With batch size B, dataset d gets
// base_d = ⌊B·w_d⌋ samples in every batch, and the fractional shares
// f_d = B·w_d − base_d, which sum to an integer r, decide who gets the r
// remaining samples of each batch. That is Pfair scheduling of tasks of
// utilisation f_d on r processors; the PD² rule (earliest pseudo-deadline,
// then the successor bit, then the later group deadline) keeps every
// dataset's lag N·f_d − extras_d(N) strictly inside (−1, 1). The shares
// have a common period Q (the lcm of their denominators); when Q would
// exceed 4096 the shares are rounded to multiples of 1/4096 sample per
// batch, keeping their sum, and those rounded weights are the plan's
// weights (Plan.Info, Plan.Weights). One period is scheduled at
// construction, every lag is checked there (a violation is an error, never
// a silent drift), and prefix counts make the number of samples of d in
// batches [0, N) a closed form, N·base_d + ⌊N/Q⌋·m_d + prefix[N mod Q][d],
// in O(1). Each batch then holds ⌊B·w_d⌋ or ⌈B·w_d⌉ samples of d, and the
// cumulative count from batch 0 stays within 1 of N·B·w_d for every N (w_d
// being the plan's weights).
//
// # Coverage and locality
//
// Dataset d's samples form one stream, numbered k = 0, 1, 2, …: sample k
// is position k mod U of dataset-epoch k / U, U being the dataset's sample
// units. An epoch is a permutation of the units built in two levels. The
// split selection's shards are grouped into windows of window_shards
// consecutive shards; each epoch orders the windows by a keyed
// Fisher–Yates shuffle, and within a window the units (episode × j, or
// every valid pair) are permuted by a keyed Feistel network on [0, n) with
// cycle-walking, keyed by (seed, dataset, epoch, window). So an epoch visits
// every unit exactly once, each epoch is a fresh permutation, and the
// dataset reads one window at a time: any run of batches that holds no more
// of a dataset than its smallest window touches at most two windows, which
// bounds the disk and RAM working set per dataset.
//
// # Random access
//
// Nothing is materialised per epoch over the units. Position k maps to a
// window through the prefix sums of the windows' unit counts in the
// epoch's window order (O(windows) to build, cached for the last few
// epochs of each dataset, O(log windows) to search) and to a unit through
// the Feistel network in O(1). Planning batch N costs O(datasets + B),
// whatever N, and the same N gives the same samples in any process, in any
// order, concurrently. Rank r of w plans global batches r, r+w, … (Shard),
// and every rank lists ⌈num_batches / w⌉ of them, reaching into the next
// epoch where the division is not even.
// Within a batch, the datasets' samples are interleaved by a keyed shuffle
// of the B positions.
//
// # Units, keys and substitution
//
// With samples_per_episode n ≥ 1 a unit is (episode, j < n) and Sample.Unit
// is j; Sample.Key = keyed.Hash(seed, h("name/split"), shard, record, j, epoch),
// h being FNV-1a finalised by splitmix64, from which pairs draws t
// uniformly over the episode's valid starts, so t changes with j and with
// the epoch. With samples_per_episode
// 0 every valid pair of every episode is a unit (needs the episode-length
// index) and Sample.Unit is t itself; an episode the index found
// unreadable is one unit (t = 0), so its bad record is met, substituted
// and counted once an epoch as in every other mode. An episode that cannot be used is
// replaced by the first usable candidate of Substitutes: every other
// episode of the same window, then of the rest of the dataset, each once,
// in an order keyed by the sample — deterministic for a sample.
package plan
