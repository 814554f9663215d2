package rlds

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/oxefs/oxefs/storage"
)

// withSourceHint adds a remedy to err, the failure to read src's
// dataset_info.json, where the cause is a common mistake:
//   - a local directory above the dataset (.../bridge instead of
//     .../bridge/0.1.0, or the directory of all datasets): the datasets
//     found below it are listed;
//   - a backend that knows a remedy for its error (storage.Explainer): a
//     GCS source whose credentials are refused, say.
//
// Other errors come back as they are. The result wraps err.
func withSourceHint(src storage.Backend, err error) error {
	switch s := src.(type) {
	case storage.Directory:
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		found := datasetsBelow(s.Dir(), 3, 10000)
		if len(found) == 0 {
			return err
		}
		list := found
		if len(list) > 10 {
			list = append(list[:10:10], fmt.Sprintf("and %d more", len(found)-10))
		}
		return fmt.Errorf("%w; no dataset_info.json in %s, but datasets below it: %s (give one of them as the source, e.g. %s)",
			err, s.Dir(), strings.Join(list, ", "), filepath.Join(s.Dir(), found[0]))
	case storage.Explainer:
		return s.Explain(err)
	}
	return err
}

// datasetsBelow lists, relative to dir and sorted, the directories at most
// depth levels below it that hold a dataset_info.json, looking at no more
// than limit entries.
func datasetsBelow(dir string, depth, limit int) []string {
	var found []string
	seen := 0
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skip it, keep looking
		}
		if seen++; seen > limit {
			return filepath.SkipAll
		}
		rel, rerr := filepath.Rel(dir, p)
		if rerr != nil {
			return nil
		}
		level := 0
		if rel != "." {
			level = strings.Count(rel, string(filepath.Separator)) + 1
		}
		switch {
		case d.IsDir() && level >= depth+1:
			return filepath.SkipDir
		case !d.IsDir() && d.Name() == "dataset_info.json" && level >= 2:
			found = append(found, filepath.ToSlash(filepath.Dir(rel)))
		}
		return nil
	})
	slices.Sort(found)
	return found
}
