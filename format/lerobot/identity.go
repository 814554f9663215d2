package lerobot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/oxefs/oxefs/episode"
)

// statParallel bounds the data files asked for their identity at once.
const statParallel = 16

// Identity names the bytes the dataset's numeric data comes from:
// meta/info.json, the episode table's rows (each episode's data file and
// row range) and the version (storage.ObjectInfo.Version) of every data
// file. It changes when any of them does, so that what was computed from
// the data (normalisation statistics) and saved under it is trusted only
// for the same data. It asks the source for each data file's identity; the
// video files are not part of it.
func (d *Dataset) Identity(ctx context.Context) (string, error) {
	refs := make([]fileRef, 0, len(d.first))
	for r := range d.first {
		refs = append(refs, r)
	}
	slices.SortFunc(refs, func(a, b fileRef) int {
		if a.chunk != b.chunk {
			return int(a.chunk - b.chunk)
		}
		return int(a.file - b.file)
	})
	versions := make([]string, len(refs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(statParallel)
	for i, r := range refs {
		g.Go(func() error {
			name, err := FilePath(d.Meta.DataPath, r.chunk, r.file, "")
			if err != nil {
				return err
			}
			info, err := d.Source.Stat(gctx, name)
			if err != nil {
				return fmt.Errorf("dataset %s: identify %s: %w", d.Name, name, err)
			}
			versions[i] = name + ":" + info.Version
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(d.infoSum[:])
	for _, e := range d.eps {
		fmt.Fprintf(h, "%d:%d/%d:%d-%d;", e.Index, e.DataChunk, e.DataFile, e.From, e.To)
	}
	for _, v := range versions {
		fmt.Fprintf(h, "%s;", v)
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// Files lists the files reading the episodes of ranges needs: info.json,
// the episode and task tables, and the data files and video files (of the
// cameras it reads, see UseCameras) those episodes lie in, each once, in a
// fixed order. `oxefs warm` fetches them
// so that an offline mount can read the dataset from the disk cache.
func (d *Dataset) Files(ranges []episode.Range) ([]string, error) {
	out := append([]string{InfoPath}, d.tables...)
	out = append(out, TasksPath)
	seen := map[string]bool{}
	add := func(name string, err error) error {
		if err != nil {
			return err
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
		return nil
	}
	for _, r := range ranges {
		s, ok := d.Meta.Split(r.Split)
		if !ok || r.From < 0 || r.To > s.To-s.From || r.From > r.To {
			return nil, fmt.Errorf("dataset %s: no episodes %s[%d:%d]", d.Name, r.Split, r.From, r.To)
		}
		for i := s.From + r.From; i < s.From+r.To; i++ {
			e := d.eps[i]
			if err := add(FilePath(d.Meta.DataPath, e.DataChunk, e.DataFile, "")); err != nil {
				return nil, err
			}
			for _, k := range d.cameras {
				if err := add(d.videoPath(k, e.Videos[k])); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}
