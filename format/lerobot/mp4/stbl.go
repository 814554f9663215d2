package mp4

import "encoding/binary"

var be = binary.BigEndian

// bounds are what a file's samples are checked against: size, the bytes
// the file holds, bounds what a count read from the file may allocate;
// end is where samples may lie: size, or for ParsePartial the size the
// file's boxes declare.
type bounds struct{ size, end int64 }

// sampleTable builds a video track's samples from the boxes of its stbl
// (at path), by type. It allocates the samples only once stsz has shown
// that they fit in the box and in the file, and then checks that every
// other table agrees with stsz on their number.
func sampleTable(sb map[string]*box, path string, e edit, fb bounds, budget int) ([]Sample, error) {
	if b := sb["stz2"]; b != nil {
		return nil, unsupported(b.path, "compact sample sizes (stz2) are not supported")
	}
	if sb["stsz"] == nil {
		return nil, malformed(path, "no stsz box")
	}
	n, constSize, sizes, err := parseStsz(sb["stsz"], fb.size, budget)
	if err != nil {
		return nil, err
	}
	samples := make([]Sample, n)
	if err := placeSamples(samples, sb, path, constSize, sizes, fb.end); err != nil {
		return nil, err
	}
	if err := timeSamples(samples, sb, e); err != nil {
		return nil, err
	}
	if err := markSync(samples, sb["stss"]); err != nil {
		return nil, err
	}
	return samples, nil
}

// parseStsz returns the number of samples and either their constant size
// or the table of their sizes.
func parseStsz(b *box, fileSize int64, budget int) (n int, constSize uint32, sizes []byte, err error) {
	c := cursor{b: b.body}
	c.fullBox()
	constSize = c.u32()
	count := c.u32()
	if c.short {
		return 0, 0, nil, malformed(b.path, "box is %d bytes, too short", len(b.body))
	}
	if uint64(count) > uint64(budget) {
		return 0, 0, nil, unsupported(b.path, "%d samples: more than the limit of %d in one file", count, MaxSamples)
	}
	if constSize != 0 {
		if total := uint64(count) * uint64(constSize); total > uint64(fileSize) {
			return 0, 0, nil, truncated(b.path, "%d samples of %d bytes do not fit in the file's %d bytes", count, constSize, fileSize)
		}
		return int(count), constSize, nil, nil
	}
	if uint64(count)*4 > uint64(len(c.b)) {
		return 0, 0, nil, malformed(b.path, "%d sample sizes do not fit in the %d bytes left", count, len(c.b))
	}
	return int(count), 0, c.b[:4*int(count)], nil
}

// placeSamples sets each sample's Offset and Size from the chunk offsets
// (stco or co64), the sample-to-chunk map (stsc) and the sizes.
func placeSamples(samples []Sample, sb map[string]*box, path string, constSize uint32, sizes []byte, fileSize int64) error {
	co, width := sb["stco"], 4
	switch {
	case co != nil && sb["co64"] != nil:
		return malformed(path, "both stco and co64")
	case co == nil && sb["co64"] == nil:
		return malformed(path, "no stco or co64 box")
	case co == nil:
		co, width = sb["co64"], 8
	}
	_, nChunks, chunks, err := table(co, width)
	if err != nil {
		return err
	}
	chunkOffset := func(i int64) uint64 {
		if width == 4 {
			return uint64(be.Uint32(chunks[4*i:]))
		}
		return be.Uint64(chunks[8*i:])
	}
	stsc := sb["stsc"]
	_, nEntries, entries, err := table(stsc, 12)
	if err != nil {
		return err
	}
	n := len(samples)
	i := 0
	for k := range nEntries {
		ent := entries[12*k:]
		first, perChunk, desc := int64(be.Uint32(ent)), int64(be.Uint32(ent[4:])), be.Uint32(ent[8:])
		last := int64(nChunks) // 1-based, inclusive
		if k+1 < nEntries {
			next := int64(be.Uint32(entries[12*(k+1):]))
			if next <= first || next > int64(nChunks) {
				return malformed(stsc.path, "entry %d: first chunk %d is not in (%d, %d]", k+1, next, first, nChunks)
			}
			last = next - 1
		}
		switch {
		case k == 0 && first != 1:
			return malformed(stsc.path, "entry 0: first chunk is %d, not 1", first)
		case first > int64(nChunks):
			return malformed(stsc.path, "entry %d: first chunk %d, but %s has %d chunks", k, first, co.typ, nChunks)
		case perChunk == 0:
			return malformed(stsc.path, "entry %d: 0 samples per chunk", k)
		case desc != 1:
			return malformed(stsc.path, "entry %d: sample description %d, but stsd has 1", k, desc)
		}
		// Each chunk holds at least one sample, so this runs at most
		// n+1 times before it returns.
		for chunk := first; chunk <= last; chunk++ {
			off := chunkOffset(chunk - 1)
			for range perChunk {
				if i == n {
					return malformed(stsc.path, "maps more than the %d samples in stsz", n)
				}
				size := constSize
				if constSize == 0 {
					size = be.Uint32(sizes[4*i:])
				}
				if off > uint64(fileSize) || uint64(size) > uint64(fileSize)-off {
					return truncated(path, "sample %d at offset %d, %d bytes, ends past the end of the file at %d", i, off, size, fileSize)
				}
				samples[i].Offset, samples[i].Size = int64(off), size
				off += uint64(size)
				i++
			}
		}
	}
	if i != n {
		return malformed(stsc.path, "maps %d samples, but stsz has %d", i, n)
	}
	return nil
}

// timeSamples sets each sample's DTS and PTS from stts, ctts and the edit
// list, as the package documentation describes.
func timeSamples(samples []Sample, sb map[string]*box, e edit) error {
	n := len(samples)
	stts := sb["stts"]
	_, nEntries, entries, err := table(stts, 8)
	if err != nil {
		return err
	}
	i, dts := 0, int64(0)
	for k := range nEntries {
		count, delta := be.Uint32(entries[8*k:]), be.Uint32(entries[8*k+4:])
		if uint64(count) > uint64(n-i) {
			return malformed(stts.path, "entries cover more than the %d samples in stsz", n)
		}
		for range count {
			samples[i].DTS = dts
			samples[i].PTS = dts
			dts += int64(delta) // at most 1<<24 deltas below 1<<32
			i++
		}
	}
	if i != n {
		return malformed(stts.path, "entries cover %d samples, but stsz has %d", i, n)
	}

	// Like FFmpeg, read offsets as signed in both versions: version 0
	// offsets past 1<<31 were negative ones written by old muxers.
	dtsShift := int64(0)
	if ctts := sb["ctts"]; ctts != nil {
		v, nEntries, entries, err := table(ctts, 8)
		if err != nil {
			return err
		}
		if v > 1 {
			return malformed(ctts.path, "unknown version %d", v)
		}
		i := 0
		for k := range nEntries {
			count, off := be.Uint32(entries[8*k:]), int64(int32(be.Uint32(entries[8*k+4:])))
			if uint64(count) > uint64(n-i) {
				return malformed(ctts.path, "entries cover more than the %d samples in stsz", n)
			}
			dtsShift = max(dtsShift, -off)
			for range count {
				samples[i].PTS += off
				i++
			}
		}
		if i != n {
			return malformed(ctts.path, "entries cover %d samples, but stsz has %d", i, n)
		}
	}

	delta := e.empty - e.mediaTime
	for i := range samples {
		samples[i].PTS += delta
		samples[i].DTS += delta - dtsShift
	}
	return nil
}

// markSync sets Key on the samples listed in stss, or on every sample when
// there is no stss.
func markSync(samples []Sample, stss *box) error {
	if stss == nil {
		for i := range samples {
			samples[i].Key = true
		}
		return nil
	}
	_, nEntries, entries, err := table(stss, 4)
	if err != nil {
		return err
	}
	prev := uint32(0)
	for k := range nEntries {
		s := be.Uint32(entries[4*k:])
		if s <= prev || uint64(s) > uint64(len(samples)) {
			return malformed(stss.path, "entry %d: sample %d is not in (%d, %d]", k, s, prev, len(samples))
		}
		samples[s-1].Key = true
		prev = s
	}
	return nil
}
